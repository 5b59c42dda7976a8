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

	"github.com/tierkeeper/tierkeeper/bookieagent/agentapi"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func TestAgentsRead(t *testing.T) {
	full, light := mltest.Agent(t, 0.91), mltest.Agent(t, 0.40)
	hang := testenv.SilentAddr(t)
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
	rep := agentapi.Report{Mounts: []agentapi.MountReport{
		{Usage: 0.99, Dirs: []agentapi.DirRole{{Role: agentapi.RoleJournal}}},
		{Usage: 0.70, Dirs: []agentapi.DirRole{{Role: agentapi.RoleLedger}}},
		{Usage: 0.80, Dirs: []agentapi.DirRole{{Role: agentapi.RoleLedger}, {Role: agentapi.RoleJournal}}},
		{Usage: 0.97, Error: "statfs timed out", Dirs: []agentapi.DirRole{{Role: agentapi.RoleLedger}}},
	}}
	if u, err := LedgerUsage(rep); err != nil || u != 0.80 {
		t.Errorf("LedgerUsage = %v, %v; want 0.80 (fullest readable ledger mount)", u, err)
	}
	if _, err := LedgerUsage(agentapi.Report{}); !errors.Is(err, ErrNoLedgerMount) {
		t.Errorf("empty report: %v", err)
	}
}

// TestAgentsRedactPassword: agent URLs carrying user:password (from the
// template and per bookie) against real 127.0.0.1 servers that answer 503,
// answer something that is not a report, never answer, and are closed,
// and one URL that does not parse: the password goes to the agent as
// basic auth, and no error nor Describe prints it, while each error still
// names the agent's host and port.
func TestAgentsRedactPassword(t *testing.T) {
	const secret = "SECRET-agent-pw"
	gotAuth := make(chan string, 1)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pw, ok := r.BasicAuth(); ok {
			select {
			case gotAuth <- pw:
			default:
			}
		}
		http.Error(w, "agent down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	junk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "<html>not json</html>")
	}))
	defer junk.Close()
	hang, closed := testenv.SilentAddr(t), testenv.ClosedAddr(t)
	hostPort := func(u string) string { return strings.TrimPrefix(u, "http://") }
	withCreds := func(addr string) string { return "http://tk:" + secret + "@" + addr + "/report" }
	_, downPort, _ := net.SplitHostPort(hostPort(down.URL))

	a := NewAgents("http://tk:"+secret+"@{host}:"+downPort+"/report", map[string]string{
		"b-junk:3181":   withCreds(hostPort(junk.URL)),
		"b-hang:3181":   withCreds(hang),
		"b-closed:3181": withCreds(closed),
		"b-bad:3181":    "http://tk:" + secret + "@127.0.0.1:99x/report",
	}, Options{Timeout: 300 * time.Millisecond})
	if d := a.Describe(); strings.Contains(d, secret) || !strings.Contains(d, "@{host}:"+downPort+"/report") {
		t.Errorf("Describe() = %q", d)
	}
	r := a.Read(context.Background(), []string{"127.0.0.1:3181", "b-junk:3181", "b-hang:3181", "b-closed:3181", "b-bad:3181"})
	if pw := <-gotAuth; pw != secret {
		t.Errorf("agent got basic-auth password %q", pw)
	}
	if len(r.Errors) != 5 || len(r.Usage) != 0 {
		t.Fatalf("usage %v, errors %v", r.Usage, r.Errors)
	}
	want := map[string]string{
		"bookie 127.0.0.1:3181": "GET http://<redacted>@" + hostPort(down.URL) + "/report: 503 Service Unavailable: agent down",
		"bookie b-junk:3181":    "GET http://<redacted>@" + hostPort(junk.URL) + "/report: not an agent report",
		"bookie b-hang:3181":    "GET http://<redacted>@" + hang + "/report: no answer within 300ms",
		"bookie b-closed:3181":  "GET http://<redacted>@" + closed + "/report: ",
		"bookie b-bad:3181":     "GET http://<redacted>@127.0.0.1:99x/report: not a valid URL",
	}
	for _, err := range r.Errors {
		msg := err.Error()
		if strings.Contains(msg, secret) {
			t.Errorf("password printed: %s", msg)
		}
		b, _, _ := strings.Cut(msg, ": ")
		if w, ok := want[b]; !ok || !strings.Contains(msg, w) {
			t.Errorf("error %q\nwant it to contain %q", msg, w)
		}
		delete(want, b)
	}
	if !strings.Contains(fmt.Sprint(r.Errors), "connection refused") {
		t.Errorf("closed port not reported as refused: %v", r.Errors)
	}
}
