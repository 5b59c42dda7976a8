package brokeradmin

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Config says how to reach the broker admin API.
type Config struct {
	// URL is the broker's web service URL (webServicePort / TLS port), e.g.
	// "http://broker-0:8080" or "https://pulsar.example:8443"; any broker
	// or a load balancer in front of them. Required.
	URL string `json:"url"`
	// Token is a JWT for token authentication (sent as a Bearer token).
	Token blob.Secret `json:"token,omitempty"`
	// TokenFile holds the token instead (read on every call, trimmed).
	// Exclusive with Token.
	TokenFile string `json:"token_file,omitempty"`
	// CAFile is a PEM file of certificate authorities trusted for https
	// (default: the system pool).
	CAFile string `json:"ca_file,omitempty"`
	// CertFile and KeyFile are a PEM client certificate and key (TLS
	// authentication); both or neither.
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
	// InsecureSkipVerify accepts any server certificate (tests only).
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
	// Timeout bounds every call, redirects included. Default 30 s.
	Timeout blob.Duration `json:"timeout,omitempty"`
}

// DefaultTimeout is the default Config.Timeout.
const DefaultTimeout = 30 * time.Second

// maxRedirects bounds the 307 redirects to the owning broker.
const maxRedirects = 5

// Options are a Client's dependencies.
type Options struct {
	// Logger receives debug messages of every call. Default: discard.
	Logger *slog.Logger
	// Transport replaces the HTTP transport built from the TLS settings
	// (tests).
	Transport http.RoundTripper
}

// Client calls one broker admin API. Safe for concurrent use.
type Client struct {
	base    *url.URL
	cfg     Config
	timeout time.Duration
	http    *http.Client
	log     *slog.Logger
}

// New checks cfg and returns a Client. Nothing is sent yet.
func New(cfg Config, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(cfg.URL, "/"))
	switch {
	case cfg.URL == "":
		return nil, fmt.Errorf("%w: the admin URL is required", ErrConfig)
	case err != nil:
		return nil, fmt.Errorf("%w: admin URL: %v", ErrConfig, redactURLError(err))
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: admin URL %s: scheme must be http or https", ErrConfig, u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("%w: admin URL %s has no host", ErrConfig, u.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("%w: admin URL %s: put credentials in the token, not the URL", ErrConfig, u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("%w: admin URL %s: no query or fragment allowed", ErrConfig, u.Redacted())
	case cfg.Token != "" && cfg.TokenFile != "":
		return nil, fmt.Errorf("%w: token and token_file are exclusive", ErrConfig)
	case (cfg.CertFile == "") != (cfg.KeyFile == ""):
		return nil, fmt.Errorf("%w: cert_file and key_file go together", ErrConfig)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: timeout %s is negative", ErrConfig, cfg.Timeout)
	}
	c := &Client{base: u, cfg: cfg, timeout: cfg.Timeout.D(), log: opts.Logger}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if cfg.TokenFile != "" {
		if _, err := c.token(); err != nil {
			return nil, err
		}
	}
	rt := opts.Transport
	if rt == nil {
		tc, err := cfg.tlsConfig()
		if err != nil {
			return nil, err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tc
		tr.DialContext = (&net.Dialer{Timeout: min(c.timeout, 10*time.Second), KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = min(c.timeout, 10*time.Second)
		rt = tr
	}
	c.http = &http.Client{Transport: rt, CheckRedirect: checkRedirect}
	return c, nil
}

func (cfg Config) tlsConfig() (*tls.Config, error) {
	tc, err := tlsfiles.Files{CAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}.Config()
	if err != nil {
		return nil, fmt.Errorf("%w: ca_file, cert_file, key_file: %w", ErrConfig, err)
	}
	tc.InsecureSkipVerify = cfg.InsecureSkipVerify
	return tc, nil
}

// checkRedirect follows the broker's 307s to the topic owner, keeping the
// token (net/http drops Authorization on a redirect to another host) unless
// the redirect downgrades https to http.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", len(via))
	}
	first := via[0]
	if a := first.Header.Get("Authorization"); a != "" {
		if first.URL.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("refusing to follow a redirect from https to %s with credentials", req.URL.Redacted())
		}
		req.Header.Set("Authorization", a)
	}
	return nil
}

func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			return fmt.Errorf("%s %s: %w", ue.Op, u.Redacted(), ue.Err)
		}
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// URL returns the configured admin URL.
func (c *Client) URL() string { return c.base.String() }

func (c *Client) token() (string, error) {
	if c.cfg.TokenFile == "" {
		return c.cfg.Token.Reveal(), nil
	}
	b, err := os.ReadFile(c.cfg.TokenFile)
	if err != nil {
		return "", fmt.Errorf("%w: token_file: %v", ErrConfig, err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("%w: token_file %s is empty", ErrConfig, c.cfg.TokenFile)
	}
	return t, nil
}

// TopicPath returns the admin path of a persistent topic:
// /admin/v2/persistent/tenant/ns/<encoded local> for v2 names,
// /admin/persistent/tenant/cluster/ns/<encoded local> for v1 names.
func TopicPath(t mledger.TopicName) (string, error) {
	if !t.Persistent() {
		return "", fmt.Errorf("%w: %s is not a persistent topic", ErrConfig, t)
	}
	local := mledger.EncodeName(t.Local)
	if t.IsV2() {
		return "/admin/v2/persistent/" + t.Tenant + "/" + t.Namespace + "/" + local, nil
	}
	return "/admin/persistent/" + t.Tenant + "/" + t.Cluster + "/" + t.Namespace + "/" + local, nil
}

// Unload closes the topic on the broker that owns it (all partitions for a
// partitioned topic's base name); the next client connection loads it
// again, reading its managed-ledger metadata afresh. A topic that exists
// but is not loaded is loaded and closed (the broker's behaviour), which
// costs nothing visible to clients.
func (c *Client) Unload(ctx context.Context, t mledger.TopicName) error {
	p, err := TopicPath(t)
	if err != nil {
		return err
	}
	_, err = c.do(ctx, "unload "+t.String(), http.MethodPut, p+"/unload", nil)
	return err
}

// LedgerStats is one ledger in InternalStats.
type LedgerStats struct {
	LedgerID  int64 `json:"ledgerId"`
	Entries   int64 `json:"entries"`
	Size      int64 `json:"size"`
	Offloaded bool  `json:"offloaded"`
}

// InternalStats is the part of PersistentTopicInternalStats the offloader
// reads: the broker's in-memory managed ledger.
type InternalStats struct {
	EntriesAddedCounter int64         `json:"entriesAddedCounter"`
	NumberOfEntries     int64         `json:"numberOfEntries"`
	TotalSize           int64         `json:"totalSize"`
	CurrentLedgerSize   int64         `json:"currentLedgerSize"`
	State               string        `json:"state"`
	Ledgers             []LedgerStats `json:"ledgers"`
}

// Ledger returns the stats of one ledger, if the broker lists it.
func (s *InternalStats) Ledger(id int64) (LedgerStats, bool) {
	for _, l := range s.Ledgers {
		if l.LedgerID == id {
			return l, true
		}
	}
	return LedgerStats{}, false
}

// InternalStats returns the broker's view of a (non-partitioned, or one
// partition's) topic. It loads the topic on its owner if needed.
func (c *Client) InternalStats(ctx context.Context, t mledger.TopicName) (*InternalStats, error) {
	p, err := TopicPath(t)
	if err != nil {
		return nil, err
	}
	op := "internal stats of " + t.String()
	body, err := c.do(ctx, op, http.MethodGet, p+"/internalStats", nil)
	if err != nil {
		return nil, err
	}
	var st InternalStats
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("%s: %w: answer is not internal stats JSON: %v", op, ErrRefused, err)
	}
	return &st, nil
}

// Ready calls /admin/v2/brokers/ready: the broker answers and accepts the
// credentials.
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.do(ctx, "broker readiness", http.MethodGet, "/admin/v2/brokers/ready", nil)
	return err
}

// maxBody bounds what is read of an answer.
const maxBody = 16 << 20

func (c *Client) do(ctx context.Context, op, method, path string, body io.Reader) ([]byte, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	defer cancel()
	u := c.base.String() + path
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", op, ErrConfig, err)
	}
	req.Header.Set("Accept", "application/json")
	tok, err := c.token()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if perr := parent.Err(); perr != nil {
			return nil, fmt.Errorf("%s: %w", op, perr)
		}
		var ne net.Error
		if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
			return nil, fmt.Errorf("%s: %w: no answer from %s within %s", op, ErrUnreachable, c.base.Redacted(), c.timeout)
		}
		return nil, fmt.Errorf("%s: %w: %v", op, ErrUnreachable, redactURLError(err))
	}
	defer resp.Body.Close()
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	c.log.Debug("broker admin call", "op", op, "method", method, "url", resp.Request.URL.Redacted(),
		"status", resp.StatusCode, "duration", time.Since(start))
	if resp.StatusCode >= 300 {
		return nil, &StatusError{Op: op, URL: resp.Request.URL.Redacted(), Status: resp.StatusCode, Reason: reason(data)}
	}
	if rerr != nil {
		return nil, fmt.Errorf("%s: %w: reading the answer: %v", op, ErrUnreachable, rerr)
	}
	return data, nil
}

// reason extracts Pulsar's {"reason": "..."} error text, else the start of
// the body.
func reason(body []byte) string {
	var e struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal(body, &e) == nil && e.Reason != "" {
		return e.Reason
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
