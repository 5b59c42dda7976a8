package cli

import (
	"bytes"
	"context"
	"runtime/debug"

	"github.com/spf13/cobra"
	"testing"
)

func TestVersionOf(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/tierkeeper/tierkeeper", Version: "v0.0.0-20261201214414-df6d5ec1a2b3+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "df6d5ec1a2b3"}, {Key: "vcs.time", Value: "2026-12-01T21:44:14Z"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{bi, "github.com/tierkeeper/tierkeeper v0.0.0-20261201214414-df6d5ec1a2b3+dirty (revision df6d5ec1a2b3, modified, 2026-12-01T21:44:14Z) go1.26.8"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "m"}}, "m (devel) (revision unknown: not stamped by make build) go1.26.8"},
	} {
		if got := VersionOf(tc.bi).String(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

// TestVersionFlag: --version prints "<name> <version>" to stdout and runs
// neither the command nor its PersistentPreRunE (which may reject flags).
func TestVersionFlag(t *testing.T) {
	ran := false
	root := cmd(func(*cobra.Command) error { ran = true; return nil })
	root.PersistentPreRunE = func(*cobra.Command, []string) error { ran = true; return nil }
	SetVersion(root, BuildVersion{Module: "m", Version: "v1.2.3", Revision: "abc", Go: "go1.26.8"})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if code := Run(context.Background(), root, &errOut); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if got, want := out.String(), "tool m v1.2.3 (revision abc) go1.26.8\n"; got != want || ran {
		t.Errorf("stdout %q (want %q), command ran: %v", got, want, ran)
	}
}
