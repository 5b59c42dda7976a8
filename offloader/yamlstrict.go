package offloader

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tierkeeper/tierkeeper/internal/suggest"
)

// Strict YAML: the document is parsed into a node tree first, so that every
// error names its line; then custom tags are resolved, every mapping key is
// checked against the Go type it decodes into, and only then is the tree
// decoded.

// Tags that read a scalar from outside the file. The value read is a
// secret: it never appears in errors or renderings of the config.
const (
	tagEnv  = "!env"  // !env NAME: the environment variable NAME (must be set)
	tagFile = "!file" // !file PATH: the file's content, one trailing newline removed
)

// resolver replaces !env and !file scalars with what they name, and
// remembers the values so error texts can be scrubbed of them.
type resolver struct {
	getenv   func(string) string
	readFile func(string) ([]byte, error)
	secrets  []string
	errs     []error
}

func (r *resolver) walk(n *yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode, yaml.MappingNode:
		for _, c := range n.Content {
			r.walk(c)
		}
	case yaml.ScalarNode:
		switch n.Tag {
		case tagEnv:
			name := strings.TrimSpace(n.Value)
			v := r.getenv(name)
			if name == "" || v == "" {
				r.errs = append(r.errs, fmt.Errorf("line %d: !env %q: environment variable is not set or empty", n.Line, name))
				return
			}
			r.set(n, v)
		case tagFile:
			p := strings.TrimSpace(n.Value)
			b, err := r.readFile(p)
			if err != nil {
				r.errs = append(r.errs, fmt.Errorf("line %d: !file %q: %w", n.Line, p, errors.Unwrap(err)))
				return
			}
			v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			if v == "" {
				r.errs = append(r.errs, fmt.Errorf("line %d: !file %q is empty", n.Line, p))
				return
			}
			r.set(n, v)
		}
	case yaml.AliasNode:
		// Aliases point at nodes walked where they are defined.
	}
}

func (r *resolver) set(n *yaml.Node, v string) {
	n.Tag, n.Value, n.Style = "!!str", v, 0
	r.secrets = append(r.secrets, v)
}

// scrub replaces secret values in an error text.
func (r *resolver) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, s := range r.secrets {
		if s != "" && strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "<redacted>")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return errors.New(msg)
}

func defaultReadFile(p string) ([]byte, error) { return os.ReadFile(p) }

// keyChecker is implemented by config types whose keys are not their Go
// fields (the store section, checked against the provider's own type).
type keyChecker interface {
	checkKeys(n *yaml.Node, path string) []error
}

// checkKeys reports every mapping key under n that has no field in t
// (struct fields by their tag, yaml by default, json when tag is "json").
func checkKeys(n *yaml.Node, t reflect.Type, path, tag string) []error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if kc, ok := reflect.New(t).Interface().(keyChecker); ok {
		return kc.checkKeys(n, path)
	}
	if _, ok := reflect.New(t).Interface().(yaml.Unmarshaler); ok {
		return nil // a scalar type with its own parser
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return nil // the decoder reports the type mismatch with its line
		}
		fields := fieldsOf(t, tag)
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				errs = append(errs, fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line))
				continue
			}
			f, ok := fields[k.Value]
			if !ok {
				errs = append(errs, unknownKey(k, path, fields))
				continue
			}
			errs = append(errs, checkKeys(v, f.Type, join(path, k.Value), tag)...)
		}
		return errs
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode || t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		var errs []error
		for i, c := range n.Content {
			errs = append(errs, checkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), tag)...)
		}
		return errs
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), tag)...)
		}
		return errs
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldsOf maps the keys of struct t (by tag) to their fields; inline
// (embedded) structs contribute their keys.
func fieldsOf(t reflect.Type, tag string) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get(tag), ",")
		if name == "-" {
			continue
		}
		if (f.Anonymous && name == "") || strings.Contains(opts, "inline") {
			for k, v := range fieldsOf(f.Type, tag) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

func unknownKey(k *yaml.Node, path string, fields map[string]reflect.StructField) error {
	where := "at the top level"
	if path != "" {
		where = "in " + path
	}
	known := make([]string, 0, len(fields))
	for name := range fields {
		known = append(known, name)
	}
	sort.Strings(known)
	best, bestD := suggest.Closest(k.Value, known)
	if best != "" && bestD <= max(2, len(k.Value)/3) {
		return fmt.Errorf("line %d: unknown key %q %s (did you mean %q?)", k.Line, k.Value, where, best)
	}
	return fmt.Errorf("line %d: unknown key %q %s (known: %s)", k.Line, k.Value, where, strings.Join(known, ", "))
}
