// Package ociimage builds the project's container images without a
// container daemon: a scratch base, one layer holding the static binaries
// (built with CGO_ENABLED=0 by make image) and an empty /tmp, an
// entrypoint, a non-root user and org.opencontainers.image.* labels,
// written as a tarball that `docker load`, `podman load` and `ctr import`
// read. The Dockerfile at the repository root builds the same images with
// Docker.
package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// BinDir is where the binaries are in the image.
	BinDir = "/usr/local/bin"
	// User is the numeric user:group the images run as (the "nonroot" id
	// of distroless images). Numeric, so that Kubernetes' runAsNonRoot
	// can check it without an /etc/passwd.
	User = "65532:65532"
	// Source is the org.opencontainers.image.source label.
	Source = "https://github.com/tierkeeper/tierkeeper"
)

// ErrMissingBinary: a binary the image needs is not in the binary
// directory.
var ErrMissingBinary = errors.New("binary missing")

// Image describes one image the project ships.
type Image struct {
	// Name is the image's repository name under the registry prefix and
	// the tarball's file name (bin/image-<Name>.tar).
	Name string
	// Title and Description are the OCI title and description labels.
	Title, Description string
	// Commands are the cmd/ binaries in the layer; the first is the
	// entrypoint.
	Commands []string
}

// Images are the images make image and the Dockerfile build. Every
// command under cmd/ is in one of them (the package's tests check it).
func Images() []Image {
	return []Image{
		{Name: "offloader", Title: "tierkeeper offloader",
			Description: "Offloads closed BookKeeper ledgers of Pulsar topics to S3/COS in Pulsar's tiered-storage format",
			Commands:    []string{"offloader"}},
		{Name: "bookieagent", Title: "tierkeeper bookie agent",
			Description: "Bookie disk benchmarks, BookKeeper disk settings with evidence, capacity reports (with diskbench)",
			Commands:    []string{"bookieagent", "diskbench"}},
	}
}

// Stamp is what the labels say about the build; make image passes the
// same values it links into the binaries (internal/cli's --version).
type Stamp struct {
	Version  string    // org.opencontainers.image.version
	Revision string    // org.opencontainers.image.revision (full commit id)
	Created  time.Time // org.opencontainers.image.created (the commit time: reproducible)
	// Arch is the binaries' GOARCH (default: this machine's).
	Arch string
}

// Labels returns the image's OCI annotation labels.
func (img Image) Labels(s Stamp) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       img.Title,
		"org.opencontainers.image.description": img.Description,
		"org.opencontainers.image.source":      Source,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
	}
	if !s.Created.IsZero() {
		l["org.opencontainers.image.created"] = s.Created.UTC().Format(time.RFC3339)
	}
	return l
}

// Build assembles the image from the binaries in binDir: one layer with
// them under BinDir (mode 0755, owned by root, so the process cannot
// modify them) and /tmp (1777), the entrypoint BinDir/Commands[0], User,
// the labels; every timestamp is s.Created, so the same binaries and stamp
// give the same image digest.
func (img Image) Build(binDir string, s Stamp) (v1.Image, error) {
	if len(img.Commands) == 0 {
		return nil, fmt.Errorf("image %s: no commands", img.Name)
	}
	layer, err := img.layer(binDir, s.Created)
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	out, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created:   v1.Time{Time: s.Created},
		CreatedBy: "tierkeeper make image: " + fmt.Sprint(img.Commands),
		Comment:   "static binaries",
	}})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.Name, err)
	}
	cf, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = s.Arch, "linux"
	if cf.Architecture == "" {
		cf.Architecture = runtime.GOARCH
	}
	cf.Created = v1.Time{Time: s.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{path.Join(BinDir, img.Commands[0])},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"PATH=" + BinDir, "TMPDIR=/tmp"},
		Labels:     img.Labels(s),
	}
	return mutate.ConfigFile(out, cf)
}

// layer is the uncompressed tar of the image's files, gzipped by the
// tarball package.
func (img Image) layer(binDir string, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: mtime, Format: tar.FormatPAX})
	}
	for _, d := range []string{"usr", "usr/local", "usr/local/bin"} {
		if err := dir(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := dir("tmp", 0o1777); err != nil {
		return nil, err
	}
	cmds := append([]string(nil), img.Commands...)
	sort.Strings(cmds)
	for _, c := range cmds {
		if err := addFile(tw, filepath.Join(binDir, c), path.Join(BinDir[1:], c), mtime); err != nil {
			return nil, fmt.Errorf("image %s: %w", img.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

func addFile(tw *tar.Writer, src, name string, mtime time.Time) error {
	f, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w (make image builds it)", src, ErrMissingBinary)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: st.Size(), Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// Ref is the image's reference: <registry>/<name>:<tag>.
func (img Image) Ref(registry, tag string) (name.Tag, error) {
	t, err := name.NewTag(registry + "/" + img.Name + ":" + tag)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image reference %s/%s:%s: %w", registry, img.Name, tag, err)
	}
	return t, nil
}

// WriteTarball writes im as a docker-load/ctr-import tarball at file,
// tagged ref, replacing file atomically.
func WriteTarball(file string, ref name.Tag, im v1.Image) error {
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, im); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", file, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}
