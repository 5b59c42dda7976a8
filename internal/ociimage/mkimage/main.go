// Command mkimage writes the project's container images (internal/ociimage)
// as tarballs from binaries make image has built: bin/image-<name>.tar,
// loadable with `docker load -i`, `podman load -i` or `ctr image import`.
// Progress goes to stderr, the written files and their sizes to stdout.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/ociimage"
)

func main() {
	binDir := flag.String("bin-dir", "bin/image", "directory holding the static binaries")
	out := flag.String("out", "bin", "directory to write image-<name>.tar into")
	registry := flag.String("registry", "ghcr.io/tierkeeper", "registry and namespace of the image names")
	tag := flag.String("tag", "", "image tag (default: --version)")
	version := flag.String("version", "", "org.opencontainers.image.version label (required)")
	revision := flag.String("revision", "", "org.opencontainers.image.revision label: the full commit id (required)")
	created := flag.String("created", "", "org.opencontainers.image.created label, RFC 3339 (the commit time)")
	arch := flag.String("arch", "", "architecture the binaries were built for (default: this machine's)")
	flag.Parse()
	if err := run(*binDir, *out, *registry, *tag, *version, *revision, *created, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(binDir, out, registry, tag, version, revision, created, arch string) error {
	if version == "" || revision == "" {
		return fmt.Errorf("--version %q and --revision %q: both are required", version, revision)
	}
	s := ociimage.Stamp{Version: version, Revision: revision, Arch: arch}
	if created != "" {
		t, err := time.Parse(time.RFC3339, created)
		if err != nil {
			return fmt.Errorf("--created %q: %w", created, err)
		}
		s.Created = t
	}
	if tag == "" {
		tag = version
	}
	for _, img := range ociimage.Images() {
		ref, err := img.Ref(registry, tag)
		if err != nil {
			return err
		}
		im, err := img.Build(binDir, s)
		if err != nil {
			return err
		}
		file := filepath.Join(out, "image-"+img.Name+".tar")
		if err := ociimage.WriteTarball(file, ref, im); err != nil {
			return err
		}
		st, err := os.Stat(file)
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s\t%.1f MiB\n", file, ref, float64(st.Size())/(1<<20))
	}
	return nil
}
