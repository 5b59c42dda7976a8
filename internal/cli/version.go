package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Stamped at link time by every build of the project (make build, make
// image, the Dockerfile: -ldflags "-X <this package>.stampedRevision=$(git
// rev-parse HEAD) -X <this package>.stampedTime=<commit time> -X
// <this package>.stampedModified=true|false -X
// <this package>.stampedVersion=$(git describe --tags --always --dirty)"), which
// works in git worktrees and in a Docker build context without .git, where
// Go's own -buildvcs stamping does not. Never written at run time.
var (
	stampedRevision string
	stampedTime     string
	stampedModified string
	stampedVersion  string
)

// BuildVersion describes the running binary from its build information
// (runtime/debug): the main module's version, the VCS revision and commit
// time, whether the work tree had uncommitted changes, and the Go version.
// The revision and time stamped with -ldflags take precedence over Go's
// vcs.* settings (present only in builds with -buildvcs=true from a plain
// clone); a binary with neither says "revision unknown".
type BuildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// ReadVersion returns the running binary's BuildVersion.
func ReadVersion() BuildVersion {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return BuildVersion{Version: "unknown"}
	}
	v := VersionOf(bi)
	if stampedRevision != "" {
		v.Revision, v.Time, v.Modified = stampedRevision, stampedTime, stampedModified == "true"
	}
	if stampedVersion != "" && (v.Version == "" || v.Version == "(devel)") {
		v.Version = stampedVersion
	}
	return v
}

// VersionOf extracts a BuildVersion from build information (the running
// binary's, or another's read with debug/buildinfo).
func VersionOf(bi *debug.BuildInfo) BuildVersion {
	v := BuildVersion{Module: bi.Main.Path, Version: bi.Main.Version, Go: bi.GoVersion}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the one line --version prints after the command's name:
// "<module> <version> (revision <rev>[, modified], <time>) <go version>".
func (v BuildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", v.Module, v.Version)
	switch {
	case v.Revision == "":
		b.WriteString(" (revision unknown: not stamped by make build)")
	default:
		fmt.Fprintf(&b, " (revision %s", v.Revision)
		if v.Modified {
			b.WriteString(", modified")
		}
		if v.Time != "" {
			fmt.Fprintf(&b, ", %s", v.Time)
		}
		b.WriteString(")")
	}
	if v.Go != "" {
		fmt.Fprintf(&b, " %s", v.Go)
	}
	return b.String()
}

// SetVersion gives root a --version flag printing "<name> <BuildVersion>"
// to stdout. Main calls it, so every command has --version.
func SetVersion(root *cobra.Command, v BuildVersion) {
	root.Version = v.String()
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
}
