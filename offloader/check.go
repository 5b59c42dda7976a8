package offloader

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/mlmeta"
	"github.com/tierkeeper/tierkeeper/offloader/pressure"
)

// CheckResult is the outcome of one reachability check.
type CheckResult struct {
	// Name is what was checked ("zookeeper", "store", "admin", ...).
	Name string `json:"name"`
	// Target says where (an address, a URL; never a credential).
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	// Skipped is set when the check does not apply (no admin URL ...).
	Skipped bool          `json:"skipped,omitempty"`
	Took    time.Duration `json:"-"`
	// TookSeconds is Took in seconds (JSON).
	TookSeconds float64 `json:"took_seconds"`
	// Detail says what was found (OK) or what was waited for and what
	// happened (failed).
	Detail string `json:"detail"`
}

// CheckOptions configure Check.
type CheckOptions struct {
	Logger *slog.Logger
	// StoreTimeout bounds the store check. Default 30s.
	StoreTimeout time.Duration
	// HTTPClient is used for the admin and pressure checks (tests).
	// Default: one built from the admin TLS settings.
	HTTPClient *http.Client
	// StoreOptions are passed to the blob client (tests dial test servers).
	StoreOptions client.Options
}

// Check verifies that the service's peers answer, each within its own
// bound: ZooKeeper (a session within zookeeper.connect_timeout, the
// managed-ledger root and the BookKeeper ledgers root readable), the store
// (a listing, then a HEAD of a missing key, within StoreTimeout; a missing bucket or refused
// credentials fail), the admin URL (GET /admin/v2/clusters within
// admin.timeout) and, when pressure is on, every bookie's usage source
// (within pressure.timeout). It changes nothing anywhere.
func Check(ctx context.Context, c *Config, o CheckOptions) []CheckResult {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StoreTimeout <= 0 {
		o.StoreTimeout = 30 * time.Second
	}
	var out []CheckResult
	conn, zkRes := checkZK(ctx, c, o)
	out = append(out, zkRes...)
	if conn != nil {
		defer conn.Close()
	}
	out = append(out, checkStore(ctx, c, o))
	hc := o.HTTPClient
	if hc == nil {
		var err error
		if hc, err = c.Admin.HTTPClient(); err != nil {
			out = append(out, CheckResult{Name: "admin", Target: c.Admin.URL, Detail: err.Error()})
			hc = nil
		}
	}
	if hc != nil {
		out = append(out, checkAdmin(ctx, c, hc))
	}
	out = append(out, checkPressure(ctx, c, conn, o))
	return out
}

// timed runs f and records how long it took.
func timed(r *CheckResult, f func() (string, error)) {
	start := time.Now()
	detail, err := f()
	r.Took = time.Since(start).Round(time.Millisecond)
	r.TookSeconds = r.Took.Seconds()
	if err != nil {
		r.Detail = err.Error()
		return
	}
	r.OK, r.Detail = true, detail
}

func checkZK(ctx context.Context, c *Config, o CheckOptions) (*tzk.Session, []CheckResult) {
	servers, root, _ := tzk.ParseServiceURI(c.ZooKeeper.Servers)
	r := CheckResult{Name: "zookeeper", Target: strings.Join(servers, ",")}
	var conn *tzk.Session
	timed(&r, func() (string, error) {
		var err error
		conn, err = tzk.Connect(ctx, servers, tzk.Options{SessionTimeout: c.ZooKeeper.SessionTimeout.D(),
			ConnectTimeout: c.ZooKeeper.ConnectTimeout.D(), Logger: o.Logger})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("session %#x (timeout %s)", conn.SessionID(), c.ZooKeeper.SessionTimeout), nil
	})
	if conn == nil {
		return nil, []CheckResult{r}
	}
	ml := CheckResult{Name: "managed-ledgers", Target: c.ZooKeeper.MLChroot + mlmeta.Root}
	timed(&ml, func() (string, error) {
		cctx, cancel := context.WithTimeout(ctx, c.ZooKeeper.ConnectTimeout.D())
		defer cancel()
		st := mlmeta.New(conn, &mlmeta.Options{Chroot: c.ZooKeeper.MLChroot})
		nss, err := st.ListNamespaces(cctx)
		if err != nil {
			return "", fmt.Errorf("list namespaces (waited up to %s): %w", c.ZooKeeper.ConnectTimeout, err)
		}
		if len(nss) == 0 {
			return "no namespace with persistent topics yet (is ml_chroot right?)", nil
		}
		return fmt.Sprintf("%d namespaces with persistent topics", len(nss)), nil
	})
	lr := root
	if c.BookKeeper.LedgersRoot != "" {
		lr = c.BookKeeper.LedgersRoot
	}
	bk := CheckResult{Name: "bookkeeper-metadata", Target: lr}
	timed(&bk, func() (string, error) {
		cctx, cancel := context.WithTimeout(ctx, c.ZooKeeper.ConnectTimeout.D())
		defer cancel()
		st, err := metadata.NewStore(cctx, conn, metadata.StoreOptions{Root: lr, Logger: o.Logger})
		if err != nil {
			return "", fmt.Errorf("read the ledgers root (waited up to %s): %w", c.ZooKeeper.ConnectTimeout, err)
		}
		bk.Target = st.Root()
		w, ro, err := st.Bookies(cctx)
		if err != nil {
			return "", fmt.Errorf("list bookies: %w", err)
		}
		return fmt.Sprintf("layout %s, %d writable and %d read-only bookies", st.Layout().Manager, len(w), len(ro)), nil
	})
	return conn, []CheckResult{r, ml, bk}
}

// checkProbeKey is a key no offload object can have (objects start with a
// UUID); a HEAD of it must say "not found".
const checkProbeKey = "tierkeeper-check-probe"

func checkStore(ctx context.Context, c *Config, o CheckOptions) CheckResult {
	r := CheckResult{Name: "store", Target: c.Store.Client().Type}
	timed(&r, func() (string, error) {
		sctx, cancel := context.WithTimeout(ctx, o.StoreTimeout)
		defer cancel()
		st, err := client.New(sctx, c.Store.Client(), o.StoreOptions)
		if err != nil {
			return "", fmt.Errorf("open: %w", err)
		}
		defer st.Close()
		r.Target = st.Name()
		n := 0
		err = st.Iter(sctx, "", func(blob.Attrs) error {
			n++
			if n >= 1000 {
				return errStopIter
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopIter) {
			return "", fmt.Errorf("list (waited up to %s): %w", o.StoreTimeout, err)
		}
		// A missing bucket answers HEAD with 404 as well, so list first.
		if _, err := st.Head(sctx, checkProbeKey); !errors.Is(err, blob.ErrNotFound) {
			if err == nil {
				return "", fmt.Errorf("HEAD %s: an object by that name exists", checkProbeKey)
			}
			return "", fmt.Errorf("HEAD %s (waited up to %s): %w", checkProbeKey, o.StoreTimeout, err)
		}
		more := ""
		if n >= 1000 {
			more = "+"
		}
		return fmt.Sprintf("readable, %d%s objects", n, more), nil
	})
	return r
}

var errStopIter = errors.New("stop")

// HTTPClient returns a client with the admin TLS settings and timeout.
func (a Admin) HTTPClient() (*http.Client, error) {
	tc := &tls.Config{InsecureSkipVerify: a.InsecureSkipVerify} //nolint:gosec // operator's explicit choice
	if a.CAFile != "" {
		pem, err := os.ReadFile(a.CAFile)
		if err != nil {
			return nil, fmt.Errorf("admin.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("admin.ca_file %s: no PEM certificate", a.CAFile)
		}
		tc.RootCAs = pool
	}
	if a.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(a.CertFile, a.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("admin.cert_file/key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	return &http.Client{Transport: tr, Timeout: a.Timeout.D()}, nil
}

func checkAdmin(ctx context.Context, c *Config, hc *http.Client) CheckResult {
	r := CheckResult{Name: "admin", Target: c.Admin.URL}
	if c.Admin.URL == "" {
		r.OK, r.Skipped = true, true
		r.Detail = "no admin.url: topics are not unloaded after a commit; the owning broker reloads on its next metadata write"
		return r
	}
	u := strings.TrimRight(c.Admin.URL, "/") + "/admin/v2/clusters"
	timed(&r, func() (string, error) {
		actx, cancel := context.WithTimeout(ctx, c.Admin.Timeout.D())
		defer cancel()
		req, err := http.NewRequestWithContext(actx, http.MethodGet, u, nil)
		if err != nil {
			return "", err
		}
		if c.Admin.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Admin.Token.Reveal())
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", fmt.Errorf("GET %s (waited up to %s): %w", u, c.Admin.Timeout, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		switch {
		case resp.StatusCode == http.StatusOK:
			return fmt.Sprintf("GET /admin/v2/clusters: %s", strings.TrimSpace(string(body))), nil
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return "", fmt.Errorf("GET %s: %s: the broker refused the credentials (admin.token)", u, resp.Status)
		default:
			return "", fmt.Errorf("GET %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
		}
	})
	return r
}

// PressureSource builds the configured bookie-usage source (nil when
// pressure is off).
func (c *Config) PressureSource(hc *http.Client) (pressure.Source, error) {
	p := c.Pressure
	if p.Threshold <= 0 {
		return nil, nil
	}
	o := pressure.Options{Timeout: p.Timeout.D(), Client: hc}
	if p.Prometheus.URL != "" {
		return pressure.NewPrometheus(p.Prometheus.URL, p.Prometheus.Query, p.Prometheus.BookieLabel, o)
	}
	return pressure.NewAgents(p.AgentURL, p.AgentURLs, o), nil
}

func checkPressure(ctx context.Context, c *Config, conn *tzk.Session, o CheckOptions) CheckResult {
	r := CheckResult{Name: "pressure"}
	src, err := c.PressureSource(o.HTTPClient)
	if err != nil {
		r.Detail = err.Error()
		return r
	}
	if src == nil {
		r.OK, r.Skipped, r.Detail = true, true, "pressure.threshold is 0: disk pressure does not select ledgers"
		return r
	}
	r.Target = src.Describe()
	timed(&r, func() (string, error) {
		var bookies []string
		if conn != nil {
			_, root, _ := tzk.ParseServiceURI(c.ZooKeeper.Servers)
			if c.BookKeeper.LedgersRoot != "" {
				root = c.BookKeeper.LedgersRoot
			}
			cctx, cancel := context.WithTimeout(ctx, c.ZooKeeper.ConnectTimeout.D())
			defer cancel()
			if st, err := metadata.NewStore(cctx, conn, metadata.StoreOptions{Root: root}); err == nil {
				w, ro, _ := st.Bookies(cctx)
				bookies = append(w, ro...)
			}
		}
		rd := src.Read(ctx, bookies)
		if len(rd.Errors) > 0 {
			return "", fmt.Errorf("%d of %d bookies unreadable (each waited up to %s): %w", len(rd.Errors),
				max(len(bookies), len(rd.Usage)+len(rd.Errors)), c.Pressure.Timeout, errors.Join(rd.Errors...))
		}
		return fmt.Sprintf("usage of %d bookies read", len(rd.Usage)), nil
	})
	return r
}
