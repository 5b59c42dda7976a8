package httpjson_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/httpjson"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func TestGet(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte(`{"a": 1}`))
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"a": 2}`))
		case "/down":
			http.Error(w, "agent down", http.StatusServiceUnavailable)
		case "/junk":
			_, _ = w.Write([]byte("<html>"))
		case "/big":
			_, _ = w.Write([]byte(`{"a": "` + strings.Repeat("x", 100) + `"}`))
		}
	}))
	defer hs.Close()
	ctx := context.Background()
	o := httpjson.Options{Timeout: 300 * time.Millisecond, What: "a test document"}
	var v struct{ A any }
	if body, err := httpjson.Get(ctx, hs.URL+"/ok", &v, o); err != nil || v.A != 1.0 || string(body) != `{"a": 1}` {
		t.Fatalf("ok: %v %v %q", v, err, body)
	}
	withAuth := strings.Replace(hs.URL, "http://", "http://user:SECRET@", 1)
	host := strings.TrimPrefix(hs.URL, "http://")
	silent, closed := testenv.SilentAddr(t), testenv.ClosedAddr(t)
	for _, c := range []struct {
		url, want string
		o         httpjson.Options
		status    bool
	}{
		{withAuth + "/missing", "GET http://<redacted>@" + host + "/missing: 404 Not Found: {\"a\": 2}", o, true},
		{withAuth + "/down", "GET http://<redacted>@" + host + "/down: 503 Service Unavailable: agent down", o, true},
		{withAuth + "/junk", "GET http://<redacted>@" + host + "/junk: not a test document: ", o, false},
		{withAuth + "/big", "GET http://<redacted>@" + host + "/big: the answer is larger than 50 bytes", httpjson.Options{Timeout: time.Second, MaxBytes: 50}, false},
		{"http://user:SECRET@" + silent + "/x", "GET http://<redacted>@" + silent + "/x: no answer within 300ms", o, false},
		{"http://user:SECRET@" + closed + "/x", "GET http://<redacted>@" + closed + "/x: dial tcp " + closed + ": connect: connection refused", o, false},
		{"http://user:SECRET@h:99x/x", "GET http://<redacted>@h:99x/x: not a valid URL", o, false},
		{hs.URL + "/ok", "httpjson.Options.Timeout 0s: want > 0", httpjson.Options{}, false},
	} {
		start := time.Now()
		_, err := httpjson.Get(ctx, c.url, &v, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("GET %s: %v, want %q", c.url, err, c.want)
		}
		if _, ok := errors.AsType[*httpjson.StatusError](err); ok != c.status {
			t.Errorf("GET %s: a StatusError: %v", c.url, ok)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("GET %s took %s with a %s timeout", c.url, took, c.o.Timeout)
		}
	}
	o.Accept = []int{http.StatusNotFound}
	if _, err := httpjson.Get(ctx, hs.URL+"/missing", &v, o); err != nil || v.A != 2.0 {
		t.Errorf("accepted 404: %v %v", v, err)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:p@h:1/x":     "http://<redacted>@h:1/x",
		"http://u:p/q?@h:1/x":  "http://<redacted>@h:1/x",
		"u:p@h:1":              "<redacted>@h:1",
		"http://h:1/x":         "http://h:1/x",
		"http://h:1/x?a=b@c.d": "http://<redacted>@c.d",
	} {
		if got := httpjson.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
