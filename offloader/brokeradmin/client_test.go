package brokeradmin

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// recorder is a fake broker admin endpoint that records what it was sent.
type recorder struct {
	mu       sync.Mutex
	paths    []string // RequestURI
	methods  []string
	auth     []string
	status   int
	body     string
	delay    time.Duration
	redirect string // Location for a 307 on the first request
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.EscapedPath())
	r.methods = append(r.methods, req.Method)
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	status, body, delay, redirect := r.status, r.body, r.delay, r.redirect
	r.redirect = ""
	r.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			return
		}
	}
	if redirect != "" {
		http.Redirect(w, req, redirect+req.URL.RequestURI(), http.StatusTemporaryRedirect)
		return
	}
	if status == 0 {
		status = http.StatusNoContent
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func topic(t *testing.T, name string) mledger.TopicName {
	t.Helper()
	tn, err := mledger.ParseTopic(name)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func TestUnloadPaths(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(Config{URL: srv.URL + "/", Token: "tok-123"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ topic, path string }{
		{"persistent://public/default/orders", "/admin/v2/persistent/public/default/orders/unload"},
		{"orders", "/admin/v2/persistent/public/default/orders/unload"},
		{"persistent://t/ns/x-partition-2", "/admin/v2/persistent/t/ns/x-partition-2/unload"},
		{"persistent://t/ns/a b*c~d", "/admin/v2/persistent/t/ns/a+b*c%7Ed/unload"},
		{"persistent://t/ns/über", "/admin/v2/persistent/t/ns/%C3%BCber/unload"},
		{"persistent://prop/us-west/ns/legacy", "/admin/persistent/prop/us-west/ns/legacy/unload"},
	}
	for _, tc := range cases {
		if err := c.Unload(context.Background(), topic(t, tc.topic)); err != nil {
			t.Fatalf("%s: %v", tc.topic, err)
		}
	}
	for i, tc := range cases {
		if rec.paths[i] != tc.path || rec.methods[i] != http.MethodPut || rec.auth[i] != "Bearer tok-123" {
			t.Errorf("%s: sent %s %s auth %q, want PUT %s", tc.topic, rec.methods[i], rec.paths[i], rec.auth[i], tc.path)
		}
	}
	if err := c.Unload(context.Background(), topic(t, "non-persistent://t/ns/x")); !errors.Is(err, ErrConfig) {
		t.Errorf("non-persistent topic: %v, want ErrConfig", err)
	}
}

func TestErrorsClassifiedWithReason(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(Config{URL: srv.URL, Token: "SECRET-TOKEN"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status int
		body   string
		want   error
		reason string
	}{
		{404, `{"reason":"Topic not found"}`, ErrNotFound, "Topic not found"},
		{401, `{"reason":"Authentication required"}`, ErrUnauthorized, "Authentication required"},
		{403, ``, ErrUnauthorized, ""},
		{412, `{"reason":"Topic is already fenced"}`, ErrRefused, "Topic is already fenced"},
		{500, `plain text failure`, ErrRefused, "plain text failure"},
	} {
		rec.mu.Lock()
		rec.status, rec.body = tc.status, tc.body
		rec.mu.Unlock()
		err := c.Unload(context.Background(), topic(t, "persistent://t/ns/x"))
		var se *StatusError
		if !errors.Is(err, tc.want) || !errors.As(err, &se) || se.Status != tc.status || se.Reason != tc.reason {
			t.Errorf("status %d: %v, want %v with reason %q", tc.status, err, tc.want, tc.reason)
		}
		if err != nil && (strings.Contains(err.Error(), "SECRET-TOKEN") || !strings.Contains(err.Error(), "persistent://t/ns/x")) {
			t.Errorf("error %q leaks the token or does not name the topic", err)
		}
	}
}

func TestTimeoutBoundsEveryCall(t *testing.T) {
	rec := &recorder{delay: 5 * time.Second}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	c, err := New(Config{URL: srv.URL, Timeout: blob.Duration(200 * time.Millisecond)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.Unload(context.Background(), topic(t, "persistent://t/ns/x"))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "within 200ms") {
		t.Fatalf("slow broker: %v", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("call took %s with a 200ms timeout", el)
	}
	// The caller's cancellation is reported as such.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Unload(ctx, topic(t, "persistent://t/ns/x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// Nothing listening.
	c2, _ := New(Config{URL: "http://127.0.0.1:1", Timeout: blob.Duration(2 * time.Second)}, Options{})
	if err := c2.Ready(context.Background()); !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("no broker: %v", err)
	}
}

func TestRedirectKeepsToken(t *testing.T) {
	owner := &recorder{}
	ownerSrv := httptest.NewServer(owner)
	defer ownerSrv.Close()
	// The owner is "another host" for net/http: 127.0.0.1 vs localhost.
	ownerURL := strings.Replace(ownerSrv.URL, "127.0.0.1", "localhost", 1)
	front := &recorder{redirect: ownerURL}
	frontSrv := httptest.NewServer(front)
	defer frontSrv.Close()
	c, err := New(Config{URL: frontSrv.URL, Token: "tok"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unload(context.Background(), topic(t, "persistent://t/ns/x")); err != nil {
		t.Fatal(err)
	}
	if len(owner.paths) != 1 || owner.methods[0] != http.MethodPut || owner.auth[0] != "Bearer tok" ||
		owner.paths[0] != "/admin/v2/persistent/t/ns/x/unload" {
		t.Fatalf("owner got %v %v auth %v", owner.methods, owner.paths, owner.auth)
	}
}

func TestTLSWithCAFileAndTokenFile(t *testing.T) {
	rec := &recorder{status: 200, body: `{"entriesAddedCounter":30,"ledgers":[{"ledgerId":3,"entries":10,"size":100,"offloaded":true},{"ledgerId":4,"entries":5,"size":50,"offloaded":false}]}`}
	srv := httptest.NewUnstartedServer(rec)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tn := topic(t, "persistent://t/ns/x")

	// Without the CA the certificate is refused.
	c, err := New(Config{URL: srv.URL}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.InternalStats(context.Background(), tn); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("unknown CA: %v", err)
	}
	// Insecure accepts it.
	c, _ = New(Config{URL: srv.URL, InsecureSkipVerify: true}, Options{})
	if _, err := c.InternalStats(context.Background(), tn); err != nil {
		t.Fatalf("insecure: %v", err)
	}
	c, err = New(Config{URL: srv.URL, CAFile: ca, TokenFile: tokFile}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.InternalStats(context.Background(), tn)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := st.Ledger(3); !ok || !l.Offloaded || l.Entries != 10 {
		t.Errorf("ledger 3: %+v %v", l, ok)
	}
	if l, ok := st.Ledger(4); !ok || l.Offloaded {
		t.Errorf("ledger 4: %+v %v", l, ok)
	}
	// A rotated token file is picked up on the next call.
	if err := os.WriteFile(tokFile, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InternalStats(context.Background(), tn); err != nil {
		t.Fatal(err)
	}
	last := len(rec.auth) - 1
	if rec.auth[last-1] != "Bearer first" || rec.auth[last] != "Bearer second" ||
		rec.paths[last] != "/admin/v2/persistent/t/ns/x/internalStats" {
		t.Errorf("auth %v paths %v", rec.auth, rec.paths)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pem")
	_ = os.WriteFile(bad, []byte("not pem"), 0o600)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "required"},
		{Config{URL: "ftp://h:1"}, "scheme"},
		{Config{URL: "http://"}, "no host"},
		{Config{URL: "http://u:PASSWORD@h:1"}, "credentials"},
		{Config{URL: "http://h:1", Token: "a", TokenFile: "b"}, "exclusive"},
		{Config{URL: "http://h:1", CertFile: "a"}, "together"},
		{Config{URL: "http://h:1", CAFile: bad}, "no PEM"},
		{Config{URL: "http://h:1", CAFile: filepath.Join(dir, "missing")}, "ca_file"},
		{Config{URL: "http://h:1", TokenFile: filepath.Join(dir, "missing")}, "token_file"},
		{Config{URL: "http://h:1", Timeout: -1}, "negative"},
	} {
		_, err := New(tc.cfg, Options{})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrConfig mentioning %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "PASSWORD") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}
