package cli

import (
	"encoding/json"
	"io"
)

// WriteJSON prints v on w as a command's JSON result: indented by two
// spaces, one document ending in a newline, <, > and & escaped as
// encoding/json does.
func WriteJSON(w io.Writer, v any) error { return encodeJSON(w, v, true) }

// WriteJSONUnescaped is WriteJSON leaving <, > and & as they are (a
// document people read, such as the shell commands of a plan).
func WriteJSONUnescaped(w io.Writer, v any) error { return encodeJSON(w, v, false) }

func encodeJSON(w io.Writer, v any, escapeHTML bool) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(escapeHTML)
	return enc.Encode(v)
}

// Print prints a command's result on w: v as JSON (WriteJSON) when
// asJSON, else text's rendering.
func Print(w io.Writer, asJSON bool, v any, text func(io.Writer) error) error {
	if asJSON {
		return WriteJSON(w, v)
	}
	return text(w)
}
