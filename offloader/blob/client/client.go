package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/cos"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3"
)

// Provider types.
const (
	TypeFS  = "fs"
	TypeS3  = "s3"
	TypeCOS = "cos"
)

// Config is a parsed blob config. The provider section is held decoded,
// in the provider's own Config type (exactly one of FS, S3, COS, as Type
// says), whose credentials are blob.Secret values: no rendering of a
// Config prints a secret — fmt (every verb), json.Marshal, slog's text and
// JSON handlers, YAML all give "<redacted>" (see Format and MarshalJSON).
// A marshalled Config is therefore for display; it does not parse back to
// working credentials.
type Config struct {
	// Type is fs, s3 or cos.
	Type string
	// FS, S3 and COS hold the provider section over the provider's
	// defaults; the one Type names is set.
	FS  *fs.Config
	S3  *s3.Config
	COS *cos.Config
	// Limits are the process-wide token buckets (zero: unlimited).
	Limits blob.Limits
}

// document is a config as written: the provider section still raw until
// Type says how to decode it.
type document struct {
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config"`
	Limits blob.Limits     `json:"limits,omitempty"`
}

// Parse reads a YAML or JSON config strictly and validates it.
func Parse(data []byte) (Config, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Config{}, fmt.Errorf("blob config: %w", err)
	}
	var c Config
	if err := c.UnmarshalJSON(js); err != nil {
		return Config{}, fmt.Errorf("blob config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Load reads and parses a config file.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("blob config: %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// UnmarshalJSON decodes a config document strictly (an unknown key at any
// level is an error naming it): the provider section over the provider's
// DefaultConfig.
func (c *Config) UnmarshalJSON(b []byte) error {
	var d document
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return err
	}
	out := Config{Type: d.Type, Limits: d.Limits}
	var target any
	switch d.Type {
	case TypeFS:
		v := fs.DefaultConfig()
		out.FS, target = &v, &v
	case TypeS3:
		v := s3.DefaultConfig()
		out.S3, target = &v, &v
	case TypeCOS:
		v := cos.DefaultConfig()
		out.COS, target = &v, &v
	case "":
		return errors.New("key type is required (fs, s3 or cos)")
	default:
		return fmt.Errorf("key type must be fs, s3 or cos; got %q", d.Type)
	}
	if raw := bytes.TrimSpace(d.Config); len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("key config is required for type %s", d.Type)
	}
	pd := json.NewDecoder(bytes.NewReader(d.Config))
	pd.DisallowUnknownFields()
	if err := pd.Decode(target); err != nil {
		return fmt.Errorf("config (type %s): %w", d.Type, err)
	}
	*c = out
	return nil
}

// provider returns the section Type names, or nil.
func (c Config) provider() any {
	switch {
	case c.Type == TypeFS && c.FS != nil:
		return c.FS
	case c.Type == TypeS3 && c.S3 != nil:
		return c.S3
	case c.Type == TypeCOS && c.COS != nil:
		return c.COS
	}
	return nil
}

// Provider returns a copy of the provider section: *fs.Config, *s3.Config
// or *cos.Config.
func (c Config) Provider() (any, error) {
	switch c.Type {
	case TypeFS, TypeS3, TypeCOS:
	case "":
		return nil, errors.New("blob config: key type is required (fs, s3 or cos)")
	default:
		return nil, fmt.Errorf("blob config: key type must be fs, s3 or cos; got %q", c.Type)
	}
	switch p := c.provider().(type) {
	case *fs.Config:
		v := *p
		return &v, nil
	case *s3.Config:
		v := *p
		return &v, nil
	case *cos.Config:
		v := *p
		return &v, nil
	}
	return nil, fmt.Errorf("blob config: key config is required for type %s", c.Type)
}

// MarshalJSON writes the document form (type, config, limits) with every
// secret "<redacted>".
func (c Config) MarshalJSON() ([]byte, error) {
	type out struct {
		Type   string       `json:"type"`
		Config any          `json:"config,omitempty"`
		Limits *blob.Limits `json:"limits,omitempty"`
	}
	o := out{Type: c.Type, Config: c.provider()}
	if c.Limits != (blob.Limits{}) {
		o.Limits = &c.Limits
	}
	return json.Marshal(o)
}

// String is the redacted JSON form.
func (c Config) String() string {
	b, err := c.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("blob config %s (unprintable: %v)", c.Type, err)
	}
	return string(b)
}

// Format prints String for every verb (%v, %+v, %#v, %s, %q, ...), so the
// provider structs are never printed field by field.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", c.String())
		return
	}
	_, _ = io.WriteString(f, c.String())
}

// LogValue logs the document as a group: type, config (the provider
// struct, whose secrets redact themselves in slog's text and JSON
// handlers) and limits when set.
func (c Config) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("type", c.Type), slog.Any("config", c.provider())}
	if c.Limits != (blob.Limits{}) {
		attrs = append(attrs, slog.Any("limits", c.Limits))
	}
	return slog.GroupValue(attrs...)
}

// Validate checks the type, the provider section and the limits.
func (c Config) Validate() error {
	p, err := c.Provider()
	if err != nil {
		return err
	}
	var verr error
	switch v := p.(type) {
	case *fs.Config:
		verr = v.Validate()
	case *s3.Config:
		// Validate after defaults, as New does.
		verr = v.WithDefaults().Validate()
	case *cos.Config:
		verr = v.WithDefaults().Validate()
	}
	if verr != nil {
		return fmt.Errorf("blob config: %w", verr)
	}
	l := c.Limits
	if l.UploadBytesPerSecond < 0 || l.DownloadBytesPerSecond < 0 || l.RequestsPerSecond < 0 {
		return errors.New("blob config: limits.* must not be negative")
	}
	return nil
}

// Options are the dependencies New passes to the provider.
type Options struct {
	// Logger for the provider. Default: discard.
	Logger *slog.Logger
	// Registerer, if set, gets the tierkeeper_blob_* metrics.
	Registerer prometheus.Registerer
	// Limiter is a process-wide limiter to share between stores; when nil
	// one is made from Config.Limits.
	Limiter *blob.Limiter
	// DialContext and Transport are passed to HTTP providers (tests).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	Transport   http.RoundTripper
	// Getenv reads the environment for credential sources. Default os.Getenv.
	Getenv func(string) string
}

// New builds the store a config describes, wrapped with the limiter and
// (if opts.Registerer is set) the metrics decorator.
func New(ctx context.Context, c Config, opts Options) (blob.Store, error) {
	p, err := c.Provider()
	if err != nil {
		return nil, err
	}
	lim := opts.Limiter
	if lim == nil {
		lim = blob.NewLimiter(c.Limits)
	}
	var st blob.Store
	switch v := p.(type) {
	case *fs.Config:
		s, err := fs.New(*v, fs.Options{Logger: opts.Logger})
		if err != nil {
			return nil, err
		}
		st = blob.Limited(s, lim)
	case *s3.Config:
		st, err = s3.New(ctx, *v, s3.Options{Logger: opts.Logger, Limiter: lim, DialContext: opts.DialContext, Transport: opts.Transport, Getenv: opts.Getenv})
	case *cos.Config:
		st, err = cos.New(*v, cos.Options{Logger: opts.Logger, Limiter: lim, DialContext: opts.DialContext, Transport: opts.Transport, Getenv: opts.Getenv})
	}
	if err != nil {
		return nil, err
	}
	if opts.Registerer != nil {
		return blob.WithMetrics(st, opts.Registerer)
	}
	return st, nil
}

// Open is Load followed by New.
func Open(ctx context.Context, path string, opts Options) (blob.Store, error) {
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	return New(ctx, c, opts)
}
