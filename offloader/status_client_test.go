package offloader

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestFetchStatusRedactsPassword: a password in the base URL (behind
// an authenticating proxy) reaches the server as basic auth and no error
// prints it — a 503, a silent server, a closed port, a bad port — while
// each names host and port.
func TestFetchStatusRedactsPassword(t *testing.T) {
	const pw = "SECRET-service-pw"
	var gotPW string
	var mu sync.Mutex
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, _ := r.BasicAuth()
		mu.Lock()
		gotPW = p
		mu.Unlock()
		http.Error(w, "proxy down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	silent, closed := testenv.SilentAddr(t), testenv.ClosedAddr(t)
	downAddr := strings.TrimPrefix(down.URL, "http://")
	for addr, want := range map[string]string{
		downAddr:        "GET http://<redacted>@" + downAddr + "/status: 503 Service Unavailable",
		silent:          "GET http://<redacted>@" + silent + "/status: no answer within 300ms",
		closed:          "GET http://<redacted>@" + closed + "/status: dial tcp " + closed + ": connect: connection refused",
		"127.0.0.1:80x": `GET http://<redacted>@127.0.0.1:80x/status: not a valid URL: invalid port ":80x"`,
	} {
		_, _, err := FetchStatus(t.Context(), "http://tk:"+pw+"@"+addr, 300*time.Millisecond)
		if err == nil || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v\nwant it to contain %q", addr, err, want)
		}
	}
	if mu.Lock(); gotPW != pw {
		t.Errorf("server got basic-auth password %q", gotPW)
	}
	mu.Unlock()
}

// Without all, TopicsByLag keeps the topics with lag, an error or a
// refusal, the largest lag first and ties in the document's order.
func TestTopicsByLag(t *testing.T) {
	st := &Status{Topics: []TopicStatus{{Topic: "quiet"}, {Topic: "err", LastError: "x"}, {Topic: "small", LagBytes: 1},
		{Topic: "big", LagBytes: 9}, {Topic: "refused", Refused: "broker"}}}
	names := func(ts []TopicStatus) string {
		var n []string
		for _, t := range ts {
			n = append(n, t.Topic)
		}
		return strings.Join(n, ",")
	}
	if got := names(st.TopicsByLag(false)); got != "big,small,err,refused" {
		t.Errorf("topics needing attention: %s", got)
	}
	if got := names(st.TopicsByLag(true)); got != "big,small,quiet,err,refused" {
		t.Errorf("all topics: %s", got)
	}
}
