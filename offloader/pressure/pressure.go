// Package pressure reads how full the bookies' ledger disks are, for the
// policy's disk-pressure trigger: from the bookie agents' /report (the
// usage of the fullest mount holding a ledger directory) or from one
// Prometheus query returning a usage ratio per bookie. Every request is
// bounded by Options.Timeout; a bookie whose usage cannot be read is
// reported in Reading.Errors and left out (it never counts as pressured).
package pressure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/tierkeeper/tierkeeper/bookieagent/agentapi"
	"github.com/tierkeeper/tierkeeper/internal/httpjson"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Reading is one round of usage figures.
type Reading struct {
	// Usage is the ledger-disk usage ratio (0..1) per bookie id.
	Usage map[string]float64
	// Errors name the bookies (or the query) that could not be read.
	Errors []error
	At     time.Time
}

// Source reads bookie usage.
type Source interface {
	// Read returns the usage of the given bookies (the agents source) or
	// of every bookie the query returns (Prometheus, which reports each
	// of the given bookies the result lacks).
	Read(ctx context.Context, bookies []string) Reading
	// Describe names the source for logs and --check.
	Describe() string
}

// Options configure both sources.
type Options struct {
	// Timeout bounds one request. Default 5s.
	Timeout time.Duration
	// Client is the HTTP client. Default: a client with Timeout.
	Client *http.Client
	// Concurrency bounds agent requests in flight. Default 8.
	Concurrency int
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.Timeout}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Agents reads the bookie agents' /report. A user and password in an
// agent URL (http://user:password@{host}:9580/report) are sent as basic
// auth and never printed: Describe and every error show the URL as
// blob.RedactURL gives it.
type Agents struct {
	// Template is a URL with {host}, replaced by the host part of the
	// bookie id ("http://{host}:9580/report").
	Template string
	// URLs are explicit report URLs per bookie id (override Template).
	URLs map[string]string
	o    Options
}

// NewAgents returns an agents source.
func NewAgents(template string, urls map[string]string, o Options) *Agents {
	o.defaults()
	return &Agents{Template: template, URLs: urls, o: o}
}

// Describe implements Source.
func (a *Agents) Describe() string {
	if a.Template != "" {
		return "bookie agents at " + blob.RedactURL(a.Template)
	}
	return fmt.Sprintf("bookie agents (%d URLs)", len(a.URLs))
}

// URLFor returns the report URL of bookie id, or "" when none is known.
func (a *Agents) URLFor(id string) string {
	if u, ok := a.URLs[id]; ok {
		return u
	}
	if a.Template == "" {
		return ""
	}
	host := id
	if h, _, err := net.SplitHostPort(id); err == nil {
		host = h
	}
	return strings.ReplaceAll(a.Template, "{host}", host)
}

// Read implements Source: one GET per bookie, Concurrency at a time.
func (a *Agents) Read(ctx context.Context, bookies []string) Reading {
	r := Reading{Usage: map[string]float64{}, At: a.o.Now()}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, a.o.Concurrency)
	for _, b := range bookies {
		u := a.URLFor(b)
		if u == "" {
			// Under mu: the goroutines of earlier bookies append too.
			mu.Lock()
			r.Errors = append(r.Errors, fmt.Errorf("bookie %s: no agent URL (set pressure.agent_url or agent_urls)", b))
			mu.Unlock()
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			v, err := a.readOne(ctx, u)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.Errors = append(r.Errors, fmt.Errorf("bookie %s: %w", b, err))
				return
			}
			r.Usage[b] = v
		}()
	}
	wg.Wait()
	sort.Slice(r.Errors, func(i, j int) bool { return r.Errors[i].Error() < r.Errors[j].Error() })
	return r
}

// ErrNoLedgerMount is returned for a report without a ledger mount.
var ErrNoLedgerMount = errors.New("agent report has no mount holding a ledger directory")

func (a *Agents) readOne(ctx context.Context, u string) (float64, error) {
	var rep agentapi.Report
	if _, err := httpjson.Get(ctx, u, &rep, httpjson.Options{Client: a.o.Client, Timeout: a.o.Timeout, MaxBytes: 4 << 20, What: "an agent report"}); err != nil {
		return 0, err
	}
	return LedgerUsage(rep)
}

// LedgerUsage is the usage of the fullest mount of rep that holds a ledger
// directory: BookKeeper stops writing to a directory past its threshold,
// so the fullest ledger disk is the one to relieve.
func LedgerUsage(rep agentapi.Report) (float64, error) {
	best, found := 0.0, false
	for _, m := range rep.Mounts {
		if m.Error != "" {
			continue
		}
		for _, d := range m.Dirs {
			if d.Role == agentapi.RoleLedger {
				found = true
				best = max(best, m.Usage)
			}
		}
	}
	if !found {
		return 0, ErrNoLedgerMount
	}
	return best, nil
}

// Prometheus reads usage with one instant query.
type Prometheus struct {
	URL, Query, Label string
	// shown is URL as blob.RedactURL gives it: what messages print.
	shown string
	api   promv1.API
	o     Options
}

// NewPrometheus returns a Prometheus source; label is the label holding
// the bookie id. Credentials in url (http://user:password@host:9090) are
// sent as basic auth and never printed.
func NewPrometheus(rawURL, query, label string, o Options) (*Prometheus, error) {
	o.defaults()
	shown := blob.RedactURL(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("prometheus %s: %w", shown, ErrBadPrometheusURL)
	}
	c, err := promapi.NewClient(promapi.Config{Address: rawURL, Client: o.Client})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", shown, err)
	}
	return &Prometheus{URL: rawURL, Query: query, Label: label, shown: shown, api: promv1.NewAPI(c), o: o}, nil
}

// ErrBadPrometheusURL is returned by NewPrometheus for a URL that is not
// http(s)://host[:port][/path].
var ErrBadPrometheusURL = errors.New("want an http(s)://host:port URL")

// Describe implements Source.
func (p *Prometheus) Describe() string { return "prometheus " + p.shown }

// Read implements Source. The query must return an instant vector of
// usage ratios (0..1), each sample labelled with the bookie id in Label;
// several samples of one bookie count as the largest. Reported in Errors,
// the bookie left out: a sample without the label or whose value is not a
// ratio (NaN, negative, above 1 as a percentage would be) and, when
// bookies are given, each of them the result does not hold (its agent
// not scraped, say). A failed query, a result of another type or an empty
// one is one error naming the query.
func (p *Prometheus) Read(ctx context.Context, bookies []string) Reading {
	r := Reading{Usage: map[string]float64{}, At: p.o.Now()}
	ctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, p.Query, r.At, promv1.WithTimeout(p.o.Timeout))
	if err != nil {
		var ne net.Error
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			err = fmt.Errorf("no answer within %s: %w", p.o.Timeout, err)
		}
		r.Errors = append(r.Errors, fmt.Errorf("prometheus %s: query %q: %w", p.shown, p.Query, err))
		return r
	}
	vec, ok := v.(model.Vector)
	if !ok {
		r.Errors = append(r.Errors, fmt.Errorf("prometheus %s: query %q returned a %s, want an instant vector: %w", p.shown, p.Query, v.Type(), ErrNotVector))
		return r
	}
	bad := map[string]bool{}
	for _, s := range vec {
		b := string(s.Metric[model.LabelName(p.Label)])
		if b == "" {
			r.Errors = append(r.Errors, fmt.Errorf("prometheus %s: a sample has no %q label: %s", p.shown, p.Label, s.Metric))
			continue
		}
		u := float64(s.Value)
		if math.IsNaN(u) || u < 0 || u > 1 {
			r.Errors = append(r.Errors, fmt.Errorf("bookie %s: prometheus %s: usage %v is not a ratio 0..1 (%s): %w", b, p.shown, u, s.Metric, ErrNotRatio))
			bad[b] = true
			continue
		}
		r.Usage[b] = max(r.Usage[b], u)
	}
	for b := range bad {
		delete(r.Usage, b)
	}
	if len(vec) == 0 && len(bookies) == 0 {
		r.Errors = append(r.Errors, fmt.Errorf("prometheus %s: query %q returned no samples", p.shown, p.Query))
	}
	for _, b := range bookies {
		if _, ok := r.Usage[b]; !ok && !bad[b] {
			r.Errors = append(r.Errors, fmt.Errorf("bookie %s: prometheus %s: no sample with %s=%q in the result of %q", b, p.shown, p.Label, b, p.Query))
		}
	}
	sort.Slice(r.Errors, func(i, j int) bool { return r.Errors[i].Error() < r.Errors[j].Error() })
	return r
}

// ErrNotVector is returned when the query's result is not an instant
// vector (a scalar, a range vector, a string).
var ErrNotVector = errors.New("not an instant vector")

// ErrNotRatio is returned for a sample that is not a usage ratio 0..1.
var ErrNotRatio = errors.New("not a usage ratio")
