package ociimage

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestImagesCoverEveryCommand: every command under cmd/ is shipped in an
// image, and each image's commands exist.
func TestImagesCoverEveryCommand(t *testing.T) {
	ents, err := os.ReadDir("../../cmd")
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string]bool{}
	for _, img := range Images() {
		for _, c := range img.Commands {
			shipped[c] = true
		}
	}
	for _, e := range ents {
		if e.IsDir() && !shipped[e.Name()] {
			t.Errorf("cmd/%s is in no image (add it to Images)", e.Name())
		}
		delete(shipped, e.Name())
	}
	for c := range shipped {
		t.Errorf("image command %s: no cmd/%s", c, c)
	}
}

// The stamp the test links into the binary, as make image does.
const stampPkg = "github.com/tierkeeper/tierkeeper/internal/cli"

// TestImageTarball builds diskbench statically (CGO_ENABLED=0, the stamp
// linked in as make image does), makes an image of it, and unpacks the
// tarball by hand: manifest.json as docker load reads it, the config
// (entrypoint, non-root user, labels), the one layer; then runs the binary
// taken from the layer with --version.
func TestImageTarball(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	const rev = "0123456789abcdef0123456789abcdef01234567"
	created := time.Date(2026, 12, 1, 21, 44, 14, 0, time.UTC)
	ctx := context.Background()
	build := exec.Command("go", "build", "-trimpath", "-o", binDir+"/",
		"-ldflags", "-s -w -X "+stampPkg+".stampedRevision="+rev+" -X "+stampPkg+".stampedTime="+created.Format(time.RFC3339),
		"../../cmd/diskbench")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if _, err := testenv.RunTool(ctx, 8*time.Minute, build); err != nil {
		t.Fatalf("go build: %v", err)
	}

	img := Image{Name: "diskbench", Title: "t", Description: "d", Commands: []string{"diskbench"}}
	im, err := img.Build(binDir, Stamp{Version: "v9.9.9-test", Revision: rev, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := img.Ref("example.test/tk", "v9.9.9-test")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "image-diskbench.tar")
	if err := WriteTarball(file, ref, im); err != nil {
		t.Fatal(err)
	}

	files := untar(t, file)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || !slices.Equal(manifest[0].RepoTags, []string{"example.test/tk/diskbench:v9.9.9-test"}) || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest.json: %+v", manifest)
	}
	var cfg struct {
		Architecture, OS string
		Config           struct {
			Entrypoint []string
			Cmd        []string
			User       string
			Env        []string
			Labels     map[string]string
		} `json:"config"`
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[manifest[0].Config], &cfg); err != nil {
		t.Fatalf("config %s: %v", manifest[0].Config, err)
	}
	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/diskbench"}) || c.Cmd != nil || c.User != User || cfg.OS != "linux" || len(cfg.RootFS.DiffIDs) != 1 {
		t.Errorf("config: %+v", cfg)
	}
	if uid, _, _ := strings.Cut(c.User, ":"); uid == "0" || uid == "" || uid == "root" {
		t.Errorf("user %q is root", c.User)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  "v9.9.9-test",
		"org.opencontainers.image.revision": rev,
		"org.opencontainers.image.created":  "2026-12-01T21:44:14Z",
		"org.opencontainers.image.source":   Source,
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	// The layer: directories, /tmp, the binary (root-owned, 0755).
	layer := untarGz(t, files[manifest[0].Layers[0]])
	bin, ok := layer["usr/local/bin/diskbench"]
	if !ok || bin.hdr.Mode != 0o755 || bin.hdr.Uid != 0 {
		t.Fatalf("layer has %v; diskbench %+v", keys(layer), bin.hdr)
	}
	if tmp, ok := layer["tmp/"]; !ok || tmp.hdr.Mode != 0o1777 {
		t.Errorf("layer /tmp: %+v", tmp.hdr)
	}
	exe := filepath.Join(dir, "from-layer")
	if err := os.WriteFile(exe, bin.data, 0o755); err != nil {
		t.Fatal(err)
	}
	assertStatic(t, exe)
	out, err := testenv.RunTool(ctx, 30*time.Second, exec.Command(exe, "--version"))
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	if want := "diskbench github.com/tierkeeper/tierkeeper (devel) (revision " + rev + ", 2026-12-01T21:44:14Z) go"; !strings.HasPrefix(string(out), want) {
		t.Errorf("--version printed %q, want prefix %q", out, want)
	}

	// The same binaries and stamp give the same image.
	again, err := img.Build(binDir, Stamp{Version: "v9.9.9-test", Revision: rev, Created: created})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := im.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("digests differ: %s, %s", d1, d2)
	}
}

func TestBuildMissingBinary(t *testing.T) {
	_, err := Images()[0].Build(t.TempDir(), Stamp{Version: "v", Revision: "r"})
	if !errors.Is(err, ErrMissingBinary) || !strings.Contains(err.Error(), "offloader") {
		t.Errorf("err = %v, want ErrMissingBinary naming offloader", err)
	}
}

// assertStatic fails unless exe is an ELF executable without an
// interpreter or shared-library dependencies (it runs on scratch).
func assertStatic(t *testing.T, exe string) {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an ELF interpreter: not static", exe)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", exe, libs)
	}
}

func untar(t *testing.T, file string) map[string][]byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	for name, e := range readTar(t, f) {
		out[name] = e.data
	}
	return out
}

type entry struct {
	hdr  *tar.Header
	data []byte
}

func untarGz(t *testing.T, b []byte) map[string]entry {
	t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("layer is not gzip: %v", err)
	}
	return readTar(t, zr)
}

func readTar(t *testing.T, r io.Reader) map[string]entry {
	t.Helper()
	tr := tar.NewReader(r)
	out := map[string]entry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = entry{h, b}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDockerfileMatchesImages: the Dockerfile's final stages are the
// images make image builds: same names, binaries, entrypoint, user.
func TestDockerfileMatchesImages(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string][]string{}
	var cur string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "FROM" && f[2] == "AS":
			cur = f[3]
			if f[1] != "scratch" {
				cur = ""
			}
		case cur != "" && len(f) > 0:
			stages[cur] = append(stages[cur], line)
		}
	}
	if len(stages) != len(Images()) {
		t.Errorf("Dockerfile has scratch stages %v, want one per image", keys(stages))
	}
	for _, img := range Images() {
		st := strings.Join(stages[img.Name], "\n")
		for _, c := range img.Commands {
			if want := "COPY --from=build /out/" + c + " " + BinDir + "/" + c; !strings.Contains(st, want) {
				t.Errorf("stage %s lacks %q", img.Name, want)
			}
		}
		for _, want := range []string{"USER " + User, `ENTRYPOINT ["` + BinDir + "/" + img.Commands[0] + `"]`, `org.opencontainers.image.title="` + img.Title + `"`} {
			if !strings.Contains(st, want) {
				t.Errorf("stage %s lacks %q", img.Name, want)
			}
		}
	}
}
