package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Config is a parsed blob config.
type Config struct {
	// Type is fs, s3 or cos.
	Type string `json:"type"`
	// Config is the provider section, decoded by Provider.
	Config json.RawMessage `json:"config"`
	// Limits are the process-wide token buckets (zero: unlimited).
	Limits blob.Limits `json:"limits,omitempty"`
}

// Parse reads a YAML or JSON config strictly and validates it.
func Parse(data []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
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

// Provider decodes the provider section strictly over the provider's
// defaults; it returns *fs.Config, *s3.Config or *cos.Config.
func (c Config) Provider() (any, error) {
	var target any
	switch c.Type {
	case TypeFS:
		v := fs.DefaultConfig()
		target = &v
	case TypeS3:
		v := s3.DefaultConfig()
		target = &v
	case TypeCOS:
		v := cos.DefaultConfig()
		target = &v
	case "":
		return nil, errors.New("blob config: key type is required (fs, s3 or cos)")
	default:
		return nil, fmt.Errorf("blob config: key type must be fs, s3 or cos; got %q", c.Type)
	}
	if len(bytes.TrimSpace(c.Config)) == 0 || string(bytes.TrimSpace(c.Config)) == "null" {
		return nil, fmt.Errorf("blob config: key config is required for type %s", c.Type)
	}
	dec := json.NewDecoder(bytes.NewReader(c.Config))
	dec.DisallowUnknownFields()
	if err := dec.Decode(target); err != nil {
		return nil, fmt.Errorf("blob config: config (type %s): %w", c.Type, err)
	}
	return target, nil
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
