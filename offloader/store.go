package offloader

import (
	"encoding/json"
	"fmt"
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/blob/cos"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3"
)

// Store is the `store:` section: a blob config exactly as
// docs/blobstores.md describes it (type, config, limits), inline. It never
// prints its secrets: every rendering goes through the provider's own
// config type, whose credentials redact themselves.
type Store struct {
	cfg client.Config
	set bool
}

// Client returns the parsed blob config.
func (s Store) Client() client.Config { return s.cfg }

// IsSet reports whether the section was given.
func (s Store) IsSet() bool { return s.set }

// UnmarshalYAML converts the section to JSON and parses it with the blob
// client's strict parser (unknown keys were already reported by line).
func (s *Store) UnmarshalYAML(n *yaml.Node) error {
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("line %d: store: %w", n.Line, err)
	}
	c, err := client.Parse(js)
	if err != nil {
		return fmt.Errorf("line %d: store: %w", n.Line, err)
	}
	s.cfg, s.set = c, true
	return nil
}

// checkKeys checks type/config/limits and the provider section against the
// provider's config type.
func (s *Store) checkKeys(n *yaml.Node, path string) []error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	type top struct {
		Type   string          `json:"type"`
		Config json.RawMessage `json:"config"`
		Limits struct {
			Up   float64 `json:"upload_bytes_per_second"`
			Down float64 `json:"download_bytes_per_second"`
			Req  float64 `json:"requests_per_second"`
		} `json:"limits"`
	}
	errs := checkKeys(n, reflect.TypeFor[top](), path, "json")
	var typ string
	var cfgNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch n.Content[i].Value {
		case "type":
			typ = n.Content[i+1].Value
		case "config":
			cfgNode = n.Content[i+1]
		}
	}
	var pt reflect.Type
	switch typ {
	case client.TypeFS:
		pt = reflect.TypeFor[fs.Config]()
	case client.TypeS3:
		pt = reflect.TypeFor[s3.Config]()
	case client.TypeCOS:
		pt = reflect.TypeFor[cos.Config]()
	}
	if pt != nil && cfgNode != nil {
		errs = append(errs, checkKeys(cfgNode, pt, join(path, "config"), "json")...)
	}
	return errs
}

// redacted returns the section as a generic value with secrets redacted
// (the provider config marshalled through its own type).
func (s Store) redacted() any {
	if !s.set {
		return nil
	}
	out := map[string]any{"type": s.cfg.Type}
	if p, err := s.cfg.Provider(); err == nil {
		if js, err := json.Marshal(p); err == nil {
			var m any
			if json.Unmarshal(js, &m) == nil {
				out["config"] = m
			}
		}
	}
	l := s.cfg.Limits
	if l.UploadBytesPerSecond != 0 || l.DownloadBytesPerSecond != 0 || l.RequestsPerSecond != 0 {
		out["limits"] = l
	}
	return out
}

// MarshalYAML renders the section with secrets redacted.
func (s Store) MarshalYAML() (any, error) { return s.redacted(), nil }

// MarshalJSON renders the section with secrets redacted.
func (s Store) MarshalJSON() ([]byte, error) { return json.Marshal(s.redacted()) }

// Format prints the redacted section for every fmt verb (%v, %+v, %#v, %s).
func (s Store) Format(f fmt.State, _ rune) {
	js, _ := json.Marshal(s.redacted())
	_, _ = f.Write(js)
}
