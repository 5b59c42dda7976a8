package pressure

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
)

func TestAgentsRead(t *testing.T) {
	full, light := mltest.Agent(t, 0.91), mltest.Agent(t, 0.40)
	hang := silentServer(t)
	notAgent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusNotFound)
	}))
	defer notAgent.Close()

	a := NewAgents("", map[string]string{
		"b-full:3181":  full,
		"b-light:3181": light,
		"b-hang:3181":  "http://" + hang + "/report",
		"b-404:3181":   notAgent.URL + "/report",
	}, Options{Timeout: 300 * time.Millisecond})
	start := time.Now()
	r := a.Read(context.Background(), []string{"b-full:3181", "b-light:3181", "b-hang:3181", "b-404:3181", "b-unknown:3181"})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Read took %s with a 300ms timeout", took)
	}
	if got := fmt.Sprintf("%.2f %.2f %d", r.Usage["b-full:3181"], r.Usage["b-light:3181"], len(r.Usage)); got != "0.91 0.40 2" {
		t.Errorf("usage = %v", r.Usage)
	}
	msgs := fmt.Sprint(r.Errors)
	for _, w := range []string{"bookie b-hang:3181: GET http://" + hang + "/report: no answer within 300ms",
		"bookie b-404:3181: GET " + notAgent.URL + "/report: 404 Not Found: nope",
		"bookie b-unknown:3181: no agent URL"} {
		if !strings.Contains(msgs, w) {
			t.Errorf("errors %s\nmiss %q", msgs, w)
		}
	}
}

// silentServer returns the 127.0.0.1 address of a server that accepts
// connections and never answers; it closes when t ends.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hang := make(chan struct{})
	t.Cleanup(func() { ln.Close(); close(hang) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { <-hang; c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func TestAgentURLFor(t *testing.T) {
	a := NewAgents("http://{host}:8000/report", map[string]string{"x:3181": "http://y/report"}, Options{})
	for id, want := range map[string]string{
		"bookie-0.bookie.pulsar.svc:3181": "http://bookie-0.bookie.pulsar.svc:8000/report",
		"x:3181":                          "http://y/report",
		"plain-id":                        "http://plain-id:8000/report",
	} {
		if got := a.URLFor(id); got != want {
			t.Errorf("URLFor(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestLedgerUsage(t *testing.T) {
	rep := bookieagent.Report{Mounts: []bookieagent.MountReport{
		{Usage: 0.99, Dirs: []bookieagent.DirRole{{Role: bookieagent.RoleJournal}}},
		{Usage: 0.70, Dirs: []bookieagent.DirRole{{Role: bookieagent.RoleLedger}}},
		{Usage: 0.80, Dirs: []bookieagent.DirRole{{Role: bookieagent.RoleLedger}, {Role: bookieagent.RoleJournal}}},
		{Usage: 0.97, Error: "statfs timed out", Dirs: []bookieagent.DirRole{{Role: bookieagent.RoleLedger}}},
	}}
	if u, err := LedgerUsage(rep); err != nil || u != 0.80 {
		t.Errorf("LedgerUsage = %v, %v; want 0.80 (fullest readable ledger mount)", u, err)
	}
	if _, err := LedgerUsage(bookieagent.Report{}); !errors.Is(err, ErrNoLedgerMount) {
		t.Errorf("empty report: %v", err)
	}
}
