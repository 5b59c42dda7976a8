package offloader

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveHTTP serves Handler on Deps.Listener, else on http.listen, until
// stop (which waits up to 5s for requests in flight). It returns the
// address served.
func (s *Service) serveHTTP() (addr string, stop func(), err error) {
	ln := s.ln
	if ln == nil {
		if ln, err = net.Listen("tcp", s.cfg.HTTP.Listen); err != nil {
			return "", nil, fmt.Errorf("http.listen %s: %w", s.cfg.HTTP.Listen, err)
		}
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	return ln.Addr().String(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}, nil
}

// Handler serves /status, /metrics, /healthz and /readyz.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.gath, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		// Compact: indenting a large document (100 000 topics, ≈ 35 MB)
		// takes several times as long as encoding it; `offloader status
		// --service` (or jq) renders it for people.
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Status())
	})
	// healthz: the process serves (a liveness probe must not fail when
	// ZooKeeper is down: restarting would not help).
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// readyz: a ZooKeeper session and a first full scan.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		st := s.Status()
		if !st.Ready {
			msg := "not ready: no ZooKeeper session or first scan not done"
			if st.LastError != "" {
				msg += "; last error: " + st.LastError
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "tierkeeper offloader: /status /metrics /healthz /readyz")
	})
	return mux
}
