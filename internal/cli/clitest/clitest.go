// Package clitest runs the project's cobra commands in tests and captures
// what they write.
package clitest

import (
	"bytes"
	"context"

	"github.com/spf13/cobra"
)

// Run executes root with args on ctx and returns what it wrote to its
// output and error streams, and its error.
func Run(ctx context.Context, root *cobra.Command, args ...string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	err = root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}
