package main

import (
	"encoding/json"
	"io"
)

// writeJSON prints v as the command's indented JSON result.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
