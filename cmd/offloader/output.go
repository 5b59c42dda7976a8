package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/internal/cli"

	"github.com/tierkeeper/tierkeeper/offloader"
)

// writeJSON prints v as the command's indented JSON result.
func writeJSON(w io.Writer, v any) error { return cli.WriteJSON(w, v) }

// writeJSONLine prints v as one compact JSON line.
func writeJSONLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// printResult prints a command's result on w: v as JSON with -o json,
// else the text rendering.
func printResult(w io.Writer, g *globalOptions, v any, text func(io.Writer) error) error {
	return cli.Print(w, g.json(), v, text)
}

// printWarnings prints each warning on a line "warning: ...".
func printWarnings(w io.Writer, warnings []string) {
	for _, wn := range warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
}

// configOption is the --config flag of the service commands (run, plan,
// sweep): the service config file.
type configOption struct{ path string }

func (c *configOption) addFlag(f *pflag.FlagSet) {
	f.StringVar(&c.path, "config", "", "service config `file` (YAML)")
}

// load reads and validates the config (offloader.Load).
func (c *configOption) load() (*offloader.Config, error) {
	if c.path == "" {
		return nil, errors.New("--config is required")
	}
	return offloader.Load(c.path)
}
