package offloader

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/httpjson"
)

// maxStatusBytes bounds a /status document read by FetchStatus.
const maxStatusBytes = 64 << 20

// FetchStatus reads a running service's /status (base: the URL of its
// http.listen address, user:password allowed and never printed), bounded
// by timeout. It returns the document and its bytes as served.
func FetchStatus(ctx context.Context, base string, timeout time.Duration) (*Status, []byte, error) {
	var st Status
	body, err := httpjson.Get(ctx, strings.TrimRight(base, "/")+"/status", &st,
		httpjson.Options{Timeout: timeout, MaxBytes: maxStatusBytes, What: "an offloader status document"})
	if err != nil {
		return nil, nil, err
	}
	return &st, body, nil
}

// Attention reports whether a topic needs a reader's attention: it has
// lag, an error, or is left to the broker's own offloader.
func (ts TopicStatus) Attention() bool {
	return ts.LagBytes != 0 || ts.LastError != "" || ts.Refused != ""
}

// TopicsByLag returns the status's topics, the largest lag first (ties in
// the document's order): every topic with all, else those that need
// attention.
func (st *Status) TopicsByLag(all bool) []TopicStatus {
	var topics []TopicStatus
	for _, ts := range st.Topics {
		if all || ts.Attention() {
			topics = append(topics, ts)
		}
	}
	sort.SliceStable(topics, func(i, j int) bool { return topics[i].LagBytes > topics[j].LagBytes })
	return topics
}
