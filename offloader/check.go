package offloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/pressure"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
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
	// HTTPClient is used for the pressure check. Default: one with the
	// pressure timeout.
	HTTPClient *http.Client
	// StoreOptions are passed to the blob client (tests dial test servers).
	StoreOptions client.Options
}

// Check verifies that the service's peers answer, each within its own
// bound: ZooKeeper (a session within zookeeper.connect_timeout, with TLS
// and digest credentials when configured; with credentials, the lease
// root's ACL lets them write; the managed-ledger root and the BookKeeper
// ledgers root readable), every registered bookie (one harmless read, over
// TLS when configured), the store
// (a listing, then a HEAD of a missing key, within StoreTimeout; a missing bucket or refused
// credentials fail), the admin URL (GET /admin/v2/brokers/ready within
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
	// Config.Validate parsed zookeeper.servers already.
	pc, _ := c.peersBase()
	conn, zkRes := checkZK(ctx, c, pc, o)
	out = append(out, zkRes...)
	if conn != nil {
		defer conn.Close()
	}
	out = append(out, checkStore(ctx, pc, o))
	out = append(out, checkAdmin(ctx, pc, o.Logger))
	out = append(out, checkPressure(ctx, c, pc, conn, o))
	if conn != nil {
		out = append(out, checkBrokerOffload(ctx, c, o))
	}
	return out
}

// brokerCheckTimeout bounds the broker-offload check (a full scan and the
// admin calls of one policy evaluation).
const brokerCheckTimeout = 2 * time.Minute

// checkBrokerOffload evaluates the policy once (as plan does) and lists
// the topics left to the broker's own offloader, each with its reason. It
// fails when the broker's settings cannot be read (every topic would be
// refused); topics refused for their own policies are reported, not a
// failure.
func checkBrokerOffload(ctx context.Context, c *Config, o CheckOptions) CheckResult {
	r := CheckResult{Name: "broker-offload", Target: "topics the brokers offload themselves"}
	timed(&r, func() (string, error) {
		cctx, cancel := context.WithTimeout(ctx, brokerCheckTimeout)
		defer cancel()
		res, err := Plan(cctx, c, PlanOptions{Logger: o.Logger, HTTPClient: o.HTTPClient})
		if err != nil {
			return "", fmt.Errorf("evaluate the policy (waited up to %s): %w", brokerCheckTimeout, err)
		}
		if len(res.Report.BrokerErrors) > 0 {
			return "", fmt.Errorf("%s: every topic is left to the broker until they can be read", strings.Join(res.Report.BrokerErrors, "; "))
		}
		var refused []string
		for _, t := range res.Result.Topics {
			if t.Refused != "" {
				refused = append(refused, t.Topic+": "+t.Refused)
			}
		}
		if len(refused) == 0 {
			return fmt.Sprintf("none of %d topics: no offload threshold at broker, namespace or topic level", len(res.Result.Topics)), nil
		}
		const show = 20
		n, more := len(refused), ""
		if len(refused) > show {
			more = fmt.Sprintf("; and %d more (offloader plan lists all)", len(refused)-show)
			refused = refused[:show]
		}
		return fmt.Sprintf("%d of %d topics left to the broker's own offloader (running both loses data): %s%s",
			n, len(res.Result.Topics), strings.Join(refused, "; "), more), nil
	})
	return r
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

func checkZK(ctx context.Context, c *Config, pc PeersConfig, o CheckOptions) (*tzk.Session, []CheckResult) {
	r := CheckResult{Name: "zookeeper", Target: strings.Join(pc.ZKServers, ",")}
	if c.ZooKeeper.TLS.Enabled {
		r.Target += " (TLS)"
	}
	var conn *tzk.Session
	timed(&r, func() (string, error) {
		zo, err := c.zkOptions(o.Logger)
		if err != nil {
			return "", err
		}
		pc.ZKOptions = zo
		conn, err = pc.connect(ctx)
		if err != nil {
			return "", zkCheckError(err)
		}
		how := "plain"
		if zo.TLS != nil {
			how = "TLS"
		}
		if u := conn.User(); u != "" {
			how += fmt.Sprintf(", digest user %q", u)
		}
		return fmt.Sprintf("session %#x (timeout %s, %s)", conn.SessionID(), c.ZooKeeper.SessionTimeout, how), nil
	})
	if conn == nil {
		return nil, []CheckResult{r}
	}
	var out []CheckResult
	out = append(out, r)
	if u := conn.User(); u != "" {
		la := CheckResult{Name: "zookeeper-auth", Target: fmt.Sprintf("digest user %q on %s", u, c.Leases.Root)}
		timed(&la, func() (string, error) {
			cctx, cancel := context.WithTimeout(ctx, c.ZooKeeper.ConnectTimeout.D())
			defer cancel()
			// The lease root, or the nearest ancestor that exists: where
			// the service creates its leases.
			p := c.Leases.Root
			for {
				err := tzk.CheckWritable(cctx, conn, p, c.ZooKeeper.Digest.Reveal())
				if errors.Is(err, gozk.ErrNoNode) && p != "/" {
					p = path.Dir(p)
					continue
				}
				if err != nil {
					return "", fmt.Errorf("auth: %w", err)
				}
				return fmt.Sprintf("%s writable by this user (leases are created digest-only, world-readable)", p), nil
			}
		})
		out = append(out, la)
	}
	ml := CheckResult{Name: "managed-ledgers", Target: c.ZooKeeper.MLChroot + mledger.Root}
	timed(&ml, func() (string, error) {
		cctx, cancel := context.WithTimeout(ctx, c.ZooKeeper.ConnectTimeout.D())
		defer cancel()
		st := mledger.New(conn, &mledger.Options{Chroot: c.ZooKeeper.MLChroot})
		nss, err := st.ListNamespaces(cctx)
		if err != nil {
			return "", zkCheckError(fmt.Errorf("list namespaces (waited up to %s): %w", c.ZooKeeper.ConnectTimeout, err))
		}
		if len(nss) == 0 {
			return "no namespace with persistent topics yet (is ml_chroot right?)", nil
		}
		return fmt.Sprintf("%d namespaces with persistent topics", len(nss)), nil
	})
	lr := pc.ledgersRoot()
	lo := PeersOptions{Logger: o.Logger, Timeout: c.ZooKeeper.ConnectTimeout.D()}
	bk := CheckResult{Name: "bookkeeper-metadata", Target: lr}
	timed(&bk, func() (string, error) {
		cctx, cancel := context.WithTimeout(ctx, c.ZooKeeper.ConnectTimeout.D())
		defer cancel()
		st, err := pc.openLedgers(cctx, conn, lo)
		if err != nil {
			return "", zkCheckError(fmt.Errorf("read the ledgers root (waited up to %s): %w", c.ZooKeeper.ConnectTimeout, err))
		}
		bk.Target = st.Root()
		w, ro, err := st.Bookies(cctx)
		if err != nil {
			return "", fmt.Errorf("list bookies: %w", err)
		}
		return fmt.Sprintf("layout %s, %d writable and %d read-only bookies", st.Layout().Manager, len(w), len(ro)), nil
	})
	out = append(out, ml, bk)
	if st, err := pc.openLedgers(ctx, conn, lo); err == nil {
		out = append(out, checkBookies(ctx, c, pc, st, o))
	}
	return conn, out
}

// zkCheckError names what failed in a ZooKeeper error: the TLS handshake
// (the reason is in the error), authentication, or an ACL.
func zkCheckError(err error) error {
	switch {
	case errors.Is(err, tzk.ErrTLS):
		return fmt.Errorf("TLS: %w", err)
	case errors.Is(err, tzk.ErrAuth), errors.Is(err, gozk.ErrAuthFailed):
		return fmt.Errorf("auth: %w (check zookeeper.digest)", err)
	case errors.Is(err, gozk.ErrNoAuth):
		return fmt.Errorf("auth: %w (ZooKeeper denied access: check zookeeper.digest and the znode's ACL)", err)
	}
	return err
}

// checkBookies connects to every registered bookie as the service does
// (with bookkeeper.tls when enabled) and sends one harmless read (entry 0
// of ledger 0), each within the client's connect and read timeouts.
func checkBookies(ctx context.Context, c *Config, pc PeersConfig, st *metadata.Store, o CheckOptions) CheckResult {
	r := CheckResult{Name: "bookies", Target: "plain"}
	if c.BookKeeper.TLS.Enabled {
		r.Target = "TLS (START_TLS)"
		if c.BookKeeper.TLS.ClientAuthentication {
			r.Target += " with a client certificate"
		}
	}
	timed(&r, func() (string, error) {
		tc, err := c.bookieTLS()
		if err != nil {
			return "", err
		}
		cctx, cancel := context.WithTimeout(ctx, c.ZooKeeper.ConnectTimeout.D())
		defer cancel()
		w, ro, err := st.Bookies(cctx)
		if err != nil {
			return "", fmt.Errorf("list bookies: %w", err)
		}
		ids := append(w, ro...)
		if len(ids) == 0 {
			return "no bookie registered", nil
		}
		pc.BookieTLS = tc
		bc, err := pc.openBookies(st, PeersOptions{Logger: o.Logger})
		if err != nil {
			return "", err
		}
		defer bc.Close()
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Go(func() {
				if _, err := bc.Probe(ctx, id); err != nil {
					what := "connect"
					if errors.Is(err, bkclient.ErrTLS) {
						what = "TLS"
					}
					errs[i] = fmt.Errorf("%s: %w", what, err)
				}
			})
		}
		wg.Wait()
		var failed []error
		for _, e := range errs {
			if e != nil {
				failed = append(failed, e)
			}
		}
		if len(failed) > 0 {
			return "", fmt.Errorf("%d of %d bookies failed: %w", len(failed), len(ids), errors.Join(failed...))
		}
		return fmt.Sprintf("%d bookies answered a read", len(ids)), nil
	})
	return r
}

// checkProbeKey is a key no offload object can have (objects start with a
// UUID); a HEAD of it must say "not found".
const checkProbeKey = "tierkeeper-check-probe"

func checkStore(ctx context.Context, pc PeersConfig, o CheckOptions) CheckResult {
	r := CheckResult{Name: "store"}
	if pc.Store != nil {
		r.Target = pc.Store.Type
	}
	timed(&r, func() (string, error) {
		sctx, cancel := context.WithTimeout(ctx, o.StoreTimeout)
		defer cancel()
		pc.StoreName = "open" // the result names the store already
		st, err := pc.openStore(sctx, PeersOptions{Logger: o.Logger, StoreOptions: o.StoreOptions, Timeout: o.StoreTimeout})
		if err != nil {
			return "", err
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

func checkAdmin(ctx context.Context, pc PeersConfig, log *slog.Logger) CheckResult {
	if pc.Admin == nil {
		r := CheckResult{Name: "admin", OK: true, Skipped: true}
		r.Detail = "no admin.url: topics are not unloaded after a commit; the owning broker reloads on its next metadata write"
		return r
	}
	r := CheckResult{Name: "admin", Target: blob.RedactURL(pc.Admin.URL)}
	timed(&r, func() (string, error) {
		bc, err := pc.openAdmin(log)
		if err != nil {
			return "", err
		}
		if err := bc.Ready(ctx); err != nil {
			return "", err
		}
		return "GET /admin/v2/brokers/ready: ok", nil
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

func checkPressure(ctx context.Context, c *Config, pc PeersConfig, conn *tzk.Session, o CheckOptions) CheckResult {
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
			cctx, cancel := context.WithTimeout(ctx, c.ZooKeeper.ConnectTimeout.D())
			defer cancel()
			if st, err := pc.openLedgers(cctx, conn, PeersOptions{Timeout: c.ZooKeeper.ConnectTimeout.D()}); err == nil {
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
