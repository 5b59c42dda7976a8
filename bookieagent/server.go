package bookieagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tierkeeper/tierkeeper/internal/metrics"
)

// ServerOptions configure a Server.
type ServerOptions struct {
	// Sampler provides capacity figures. Required.
	Sampler *Sampler
	// Registerer receives the agent's collector (tierkeeper_bookieagent_*).
	// Default: a new registry with the Go and process collectors.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics serves. Default: Registerer when it is a
	// Gatherer too (a *prometheus.Registry is both).
	Gatherer prometheus.Gatherer
	// StaleAfter makes /healthz fail when the last sample is older. Default
	// 3 × the sampling interval.
	StaleAfter time.Duration
	// Conf is the bookie's bookkeeper.conf as the agent read it at start
	// (nil: none given); /conf serves its keys.
	Conf *Conf
	// Logger receives request errors. Default: discard.
	Logger *slog.Logger
}

// ConfState is what /conf serves: the keys of the bookie's
// bookkeeper.conf the agent was given (the fallback when the bookie's own
// HTTP admin server is off).
type ConfState struct {
	Path string            `json:"path"`
	Keys map[string]string `json:"keys"`
}

// BenchState is what /recommendation serves.
type BenchState struct {
	// Status is "none", "running", "done", "skipped" or "failed".
	Status string `json:"status"`
	// Reason explains "skipped" and "failed".
	Reason         string          `json:"reason,omitempty"`
	StartedAt      *time.Time      `json:"started_at,omitempty"`
	FinishedAt     *time.Time      `json:"finished_at,omitempty"`
	Recommendation *Recommendation `json:"recommendation,omitempty"`
}

// Server serves /metrics, /report, /recommendation, /conf and /healthz.
type Server struct {
	o   ServerOptions
	mux *http.ServeMux

	mu    sync.Mutex
	bench BenchState
}

// NewServer registers the agent's collector on the registry and builds the
// handlers.
func NewServer(o ServerOptions) (*Server, error) {
	if o.Sampler == nil {
		return nil, errors.New("server: no sampler")
	}
	if o.Registerer == nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		o.Registerer = reg
	}
	if o.Gatherer == nil {
		g, ok := o.Registerer.(prometheus.Gatherer)
		if !ok {
			return nil, errors.New("server: Registerer is not a Gatherer; set ServerOptions.Gatherer")
		}
		o.Gatherer = g
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 3 * o.Sampler.Interval()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if _, err := metrics.Register(o.Registerer, NewCollector(o.Sampler)); err != nil {
		return nil, fmt.Errorf("register collector: %w", err)
	}
	s := &Server{o: o, mux: http.NewServeMux(), bench: BenchState{Status: "none"}}
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn)}))
	s.mux.HandleFunc("GET /report", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, o.Sampler.Report())
	})
	s.mux.HandleFunc("GET /recommendation", func(w http.ResponseWriter, _ *http.Request) {
		st := s.Bench()
		code := http.StatusOK
		if st.Recommendation == nil {
			code = http.StatusNotFound
		}
		writeJSON(w, code, st)
	})
	s.mux.HandleFunc("GET /conf", func(w http.ResponseWriter, _ *http.Request) {
		if o.Conf == nil {
			http.Error(w, "no bookkeeper.conf given (serve --conf)", http.StatusNotFound)
			return
		}
		st := ConfState{Path: o.Conf.Path, Keys: make(map[string]string, len(o.Conf.Keys))}
		for k, v := range o.Conf.Keys {
			st.Keys[k] = v.Value
		}
		writeJSON(w, http.StatusOK, st)
	})
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		n, _, last := o.Sampler.Stats()
		age := time.Since(last)
		if n == 0 || age > o.StaleAfter {
			http.Error(w, fmt.Sprintf("stale: %d samples, last %s ago (limit %s)", n, age.Round(time.Second), o.StaleAfter), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "ok: %d samples, last %s ago\n", n, age.Round(time.Millisecond))
	})
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "bookieagent: /metrics /report /recommendation /conf /healthz")
	})
	return s, nil
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// SetBench records the benchmark state /recommendation serves.
func (s *Server) SetBench(b BenchState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bench = b
}

// Bench returns the benchmark state.
func (s *Server) Bench() BenchState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bench
}

// Serve serves on ln until ctx ends, then shuts down gracefully (5 s).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// BenchOnStartOptions configure Server.BenchOnStart.
type BenchOnStartOptions struct {
	// Bench is the benchmark to run (directories, budgets, Host, Logger).
	Bench BenchOptions
	// DirectMemoryBytes and DirectMemorySource feed the memory rules, as in
	// Input.
	DirectMemoryBytes  int64
	DirectMemorySource string
	// HeapBytes and MemoryLimitBytes / MemoryLimitSource are the JVM's
	// -Xmx and the container's memory limit, as in Input (0: unknown).
	HeapBytes         int64
	MemoryLimitBytes  int64
	MemoryLimitSource string
	// CPUsSource says where Bench.CPUs came from.
	CPUsSource string
}

// BenchOnStart is the DaemonSet's benchmark at start: it runs the recommend
// benchmark once, with PrepareBench's rules (the same as `recommend`): a
// disk holding a live bookie is not benchmarked unless
// BenchOptions.AllowLiveBookie — it records "skipped" and writes nothing —,
// and the benchmark runs in a scratch directory, stopping (status
// "failed") as soon as a bookie starts using a directory that was empty.
// Each step is recorded for /recommendation: "running", then "done" with
// the recommendation, or "failed" with the reason. It blocks until done;
// run it in a goroutine next to Serve, with the same ctx.
func (s *Server) BenchOnStart(ctx context.Context, o BenchOnStartOptions) {
	log := o.Bench.Logger
	if log == nil {
		log = s.o.Logger
	}
	if o.Bench.Logger == nil {
		o.Bench.Logger = log
	}
	prep, err := PrepareBench(ctx, o.Bench)
	if errors.Is(err, ErrLiveBookie) {
		reason := err.Error() + ": benchmarks never run on a live bookie's disk without --allow-live-bookie"
		log.Info("bench on start skipped", "reason", reason)
		s.SetBench(BenchState{Status: "skipped", Reason: reason})
		return
	}
	start := time.Now().UTC()
	s.SetBench(BenchState{Status: "running", StartedAt: &start})
	fail := func(err error) {
		end := time.Now().UTC()
		log.Warn("bench on start failed", "err", err)
		s.SetBench(BenchState{Status: "failed", Reason: err.Error(), StartedAt: &start, FinishedAt: &end})
	}
	if err != nil {
		fail(err)
		return
	}
	res, err := prep.Run(ctx)
	if err != nil {
		fail(err)
		return
	}
	rec, err := Recommend(res.Input(NodeFacts{CPUs: max(1, o.Bench.CPUs), CPUsSource: o.CPUsSource, DirectMemoryBytes: o.DirectMemoryBytes,
		DirectMemorySource: o.DirectMemorySource, HeapBytes: o.HeapBytes, MemoryLimitBytes: o.MemoryLimitBytes, MemoryLimitSource: o.MemoryLimitSource}))
	if err != nil {
		fail(err)
		return
	}
	end := time.Now().UTC()
	log.Info("bench on start done", "bytes", res.BytesWritten, "elapsed", res.Elapsed)
	s.SetBench(BenchState{Status: "done", StartedAt: &start, FinishedAt: &end, Recommendation: rec})
}
