package blob_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tierkeeper/tierkeeper/internal/allocs"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/blob/memblob"
)

func newFS(t *testing.T) blob.Store {
	t.Helper()
	s, err := fs.New(fs.Config{Dir: t.TempDir(), NoSync: true}, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestResolveRange(t *testing.T) {
	for _, c := range []struct {
		off, length, size, n int64
		ok                   bool
	}{
		{0, -1, 10, 10, true}, {3, -1, 10, 7, true}, {10, -1, 10, 0, true}, {10, 0, 10, 0, true},
		{0, 10, 10, 10, true}, {9, 1, 10, 1, true}, {0, 0, 0, 0, true}, {0, -1, 0, 0, true},
		{11, -1, 10, 0, false}, {-1, 1, 10, 0, false}, {5, 6, 10, 0, false}, {10, 1, 10, 0, false}, {0, 1, 0, 0, false},
	} {
		n, err := blob.ResolveRange(c.off, c.length, c.size)
		if c.ok != (err == nil) || (c.ok && n != c.n) {
			t.Errorf("ResolveRange(%d,%d,%d) = %d, %v", c.off, c.length, c.size, n, err)
		}
		if err != nil && !errors.Is(err, blob.ErrInvalidRange) {
			t.Errorf("error %v does not wrap ErrInvalidRange", err)
		}
	}
}

func TestHTTPRange(t *testing.T) {
	for _, c := range []struct {
		off, length int64
		want        string
	}{{0, -1, ""}, {5, -1, "bytes=5-"}, {0, 10, "bytes=0-9"}, {7, 1, "bytes=7-7"}} {
		if got := blob.HTTPRange(c.off, c.length); got != c.want {
			t.Errorf("HTTPRange(%d, %d) = %q, want %q", c.off, c.length, got, c.want)
		}
	}
	if size, err := blob.CheckRangeAnswer("x get", "k", "bytes 10-19/100", 10, 10, 10); err != nil || size != 100 {
		t.Errorf("good answer: %d, %v", size, err)
	}
	for _, c := range []struct {
		cr               string
		got, off, length int64
	}{
		{"", 10, 10, 10},                // no Content-Range
		{"bytes 10-19/100", 9, 10, 10},  // short body
		{"bytes 10-19/15", 10, 10, 10},  // object smaller than the range
		{"bytes 10-99/100", 90, 10, -1}, // good
		{"bytes 0-9/100", 10, 10, 10},   // another range than asked for
		{"bytes 10-18/100", 10, 10, 10}, // shorter range, full body
		{"bytes 10-19/*", 10, 10, 10},   // size unknown
		{"bytes 10-19/+100", 10, 10, 10},
		{"bytes 10-19/100 ", 10, 10, 10},
		{"bytes 19-10/100", 10, 10, 10},
		{"items 10-19/100", 10, 10, 10},
	} {
		_, err := blob.CheckRangeAnswer("x get", "k", c.cr, c.got, c.off, c.length)
		if (err == nil) != (c.cr == "bytes 10-99/100") {
			t.Errorf("CheckRangeAnswer(%q, got %d, off %d, length %d) = %v", c.cr, c.got, c.off, c.length, err)
		}
	}
}

var leadingZeros = regexp.MustCompile(`([ /-])0+([0-9])`)

// FuzzCheckRangeAnswer: an accepted answer names exactly the bytes asked
// for and a body of that length; whatever the header, it allocates no
// more than a short error message (the header is quoted clipped).
func FuzzCheckRangeAnswer(f *testing.F) {
	f.Add("bytes 10-19/100", int64(10), int64(10), int64(10))
	f.Add("bytes 0-0/1", int64(1), int64(0), int64(-1))
	f.Add("bytes 9223372036854775806-9223372036854775806/9223372036854775807", int64(1), int64(9223372036854775806), int64(1))
	f.Add("bytes 5-/10", int64(5), int64(5), int64(-1))
	f.Fuzz(func(t *testing.T, cr string, got, off, length int64) {
		var size int64
		var err error
		if n := allocs.Bytes(2, func() { size, err = blob.CheckRangeAnswer("x get", "k", cr, got, off, length) }); n > 4096 {
			t.Fatalf("CheckRangeAnswer(%q) allocated %d bytes", cr, n)
		}
		if err != nil {
			return
		}
		want, rerr := blob.ResolveRange(off, length, size)
		if rerr != nil || got != want || size <= 0 {
			t.Fatalf("accepted %q for off %d length %d with %d bytes: size %d, ResolveRange %d, %v", cr, off, length, got, size, want, rerr)
		}
		if canon := leadingZeros.ReplaceAllString(cr, "$1$2"); want > 0 && canon != fmt.Sprintf("bytes %d-%d/%d", off, off+want-1, size) {
			t.Fatalf("accepted %q for bytes %d-%d", cr, off, off+want-1)
		}
	})
}

func TestOrderParts(t *testing.T) {
	size := func(s string) int64 { return int64(len(s)) }
	got, total, err := blob.OrderParts(map[int]string{3: "c", 1: "aaa", 2: "bbb"}, size, 3)
	if err != nil || total != 7 || strings.Join(got, ",") != "aaa,bbb,c" {
		t.Errorf("OrderParts = %q, %d, %v", got, total, err)
	}
	if _, _, err := blob.OrderParts(map[int]string{1: "aaa", 3: "c"}, size, 3); !errors.Is(err, blob.ErrMissingPart) {
		t.Errorf("gap: %v, want ErrMissingPart", err)
	}
	if _, _, err := blob.OrderParts(map[int]string{1: "a", 2: "b"}, size, 3); !errors.Is(err, blob.ErrPartTooSmall) {
		t.Errorf("small first part: %v, want ErrPartTooSmall", err)
	}
	if _, _, err := blob.OrderParts(map[int]string{}, size, 3); !errors.Is(err, blob.ErrMissingPart) {
		t.Errorf("no parts: %v, want ErrMissingPart", err)
	}
}

func TestNormalizeMetadata(t *testing.T) {
	md, err := blob.NormalizeMetadata(map[string]string{"S3ManagedLedgerOffloaderFormatVersion": "1", "ManagedLedgerName": "public/default/persistent/t"})
	if err != nil || md["s3managedledgeroffloaderformatversion"] != "1" || md["managedledgername"] != "public/default/persistent/t" || len(md) != 2 {
		t.Errorf("NormalizeMetadata = %v, %v", md, err)
	}
	for name, in := range map[string]map[string]string{
		"space in key":   {"a b": "v"},
		"colon in key":   {"a:b": "v"},
		"newline":        {"k": "a\nb"},
		"non-ascii":      {"k": "ü"},
		"leading blank":  {"k": " v"},
		"case collision": {"Role": "a", "role": "b"},
		"empty key":      {"": "v"},
		"too large":      {"k": strings.Repeat("v", blob.MaxMetadataSize)},
	} {
		if _, err := blob.NormalizeMetadata(in); !errors.Is(err, blob.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if md, err := blob.NormalizeMetadata(nil); md != nil || err != nil {
		t.Errorf("nil map: %v %v", md, err)
	}
}

func FuzzNormalizeMetadata(f *testing.F) {
	f.Add("Key", "value")
	f.Add("k\x00", "\xff")
	f.Fuzz(func(t *testing.T, k, v string) {
		md, err := blob.NormalizeMetadata(map[string]string{k: v})
		if err == nil {
			for mk, mv := range md {
				if mk != strings.ToLower(mk) || strings.TrimSpace(mv) != mv {
					t.Fatalf("accepted %q=%q", mk, mv)
				}
			}
		}
	})
}

func TestSecretNeverPrints(t *testing.T) {
	type cfg struct {
		ID  string
		Key blob.Secret `json:"key"`
	}
	c := cfg{ID: "id", Key: "hunter2-secret"}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("x", "cfg", c, "key", c.Key)
	j, _ := json.Marshal(c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s %q %x %v", c.Key, c.Key, c.Key, c.Key), string(j), logs.String()} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("secret printed: %s", s)
		}
	}
	if c.Key.Reveal() != "hunter2-secret" {
		t.Error("Reveal lost the value")
	}
	var back cfg
	if err := json.Unmarshal([]byte(`{"key":"abc"}`), &back); err != nil || back.Key.Reveal() != "abc" {
		t.Errorf("unmarshal: %v %q", err, back.Key.Reveal())
	}
	if blob.Secret("").String() != "" {
		t.Error("empty secret should print empty")
	}
}

func TestDurationJSON(t *testing.T) {
	var d blob.Duration
	if err := json.Unmarshal([]byte(`"1m30s"`), &d); err != nil || d.D() != 90*time.Second {
		t.Errorf("%v %v", d, err)
	}
	if err := json.Unmarshal([]byte(`90`), &d); err == nil {
		t.Error("a bare number was accepted as a duration")
	}
}

func TestPayload(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000)
	for name, r := range map[string]io.Reader{"seekable": bytes.NewReader(data), "stream": io.MultiReader(bytes.NewReader(data))} {
		p, err := blob.NewPayload(r, 5000)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := 0; i < 2; i++ { // re-readable
			got, _ := io.ReadAll(p.Reader())
			if !bytes.Equal(got, data[:5000]) {
				t.Errorf("%s: read %d: wrong bytes", name, i)
			}
		}
		p.Close()
	}
	if _, err := blob.NewPayload(io.MultiReader(bytes.NewReader(data)), int64(len(data))+1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short stream: %v", err)
	}
	if _, err := blob.NewPayload(bytes.NewReader(data), int64(len(data))+1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short seekable: %v", err)
	}
}

// The decorators pass the acceptance suite.
func TestDecoratorsAcceptance(t *testing.T) {
	m, err := blob.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	l := blob.NewLimiter(blob.Limits{UploadBytesPerSecond: 1 << 30, DownloadBytesPerSecond: 1 << 30, RequestsPerSecond: 1e6})
	s := m.Wrap(blob.Limited(newFS(t), l))
	if _, ok := s.(blob.MultipartLister); !ok {
		t.Fatal("decorators hide MultipartLister")
	}
	blobtest.AcceptanceTest(t, s)
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := blob.WithMetrics(newFS(t), reg)
	if err != nil {
		t.Fatal(err)
	}
	// A second store on the same registry shares the series (the service
	// opens several); a foreign metric of the same name is an error.
	s2, err := blob.WithMetrics(newFS(t), reg)
	if err != nil {
		t.Fatalf("second store on one registry: %v", err)
	}
	foreign := prometheus.NewRegistry()
	foreign.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "tierkeeper_blob_uploaded_bytes_total", Help: "other"}))
	if _, err := blob.NewMetrics(foreign); err == nil {
		t.Error("registered over a foreign metric of the same name")
	}
	ctx := context.Background()
	s2.Head(ctx, "missing")                                           // not found: not a failure; counted with s's
	s.Put(ctx, "k", strings.NewReader("hello"), 5, blob.PutOptions{}) // ok, 5 bytes
	s.Put(ctx, "", strings.NewReader("x"), 1, blob.PutOptions{})      // failure
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	s.Put(cctx, "c", strings.NewReader("x"), 1, blob.PutOptions{}) // cancelled: not a failure
	rc, _, err := s.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(rc)
	rc.Close()

	counter := func(name, op string) float64 {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetValue() == op {
						if m.Counter != nil {
							return m.Counter.GetValue()
						}
						return float64(m.Histogram.GetSampleCount())
					}
				}
			}
		}
		return -1
	}
	for _, c := range []struct {
		name, op string
		want     float64
	}{
		{"tierkeeper_blob_operations_total", "put", 3},
		{"tierkeeper_blob_operation_failures_total", "put", 1},
		{"tierkeeper_blob_operations_total", "head", 1},
		{"tierkeeper_blob_operation_failures_total", "head", 0},
		{"tierkeeper_blob_operation_duration_seconds", "put", 3},
		{"tierkeeper_blob_operation_duration_seconds", "get", 1},
		{"tierkeeper_blob_operations_total", "list_multipart", 0}, // pre-created
	} {
		if got := counter(c.name, c.op); got != c.want {
			t.Errorf("%s{operation=%q} = %v, want %v", c.name, c.op, got, c.want)
		}
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		switch mf.GetName() {
		case "tierkeeper_blob_uploaded_bytes_total", "tierkeeper_blob_downloaded_bytes_total":
			if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 5 {
				t.Errorf("%s = %v, want 5", mf.GetName(), v)
			}
		}
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
		t.Errorf("gather: %d, %v", n, err)
	}
	if probs, err := testutil.GatherAndLint(reg); err != nil || len(probs) != 0 {
		t.Errorf("metric lint: %v %v", probs, err)
	}
}

// Rates are checked by lower bounds only: a slow machine can only make a
// limited operation slower.
func TestLimitedUploadBytes(t *testing.T) {
	l := blob.NewLimiter(blob.Limits{UploadBytesPerSecond: 400 << 10}) // burst 40 KiB
	s := blob.Limited(newFS(t), l)
	ctx := context.Background()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ { // two uploads share the bucket
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := make([]byte, 100<<10)
			if _, err := s.Put(ctx, fmt.Sprint("k", i), io.MultiReader(bytes.NewReader(data)), int64(len(data)), blob.PutOptions{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// 200 KiB at 400 KiB/s with a 40 KiB burst: at least 0.4 s.
	if el := time.Since(start); el < 380*time.Millisecond {
		t.Errorf("200 KiB at 400 KiB/s took %v", el)
	}
}

func TestLimitedRequests(t *testing.T) {
	l := blob.NewLimiter(blob.Limits{RequestsPerSecond: 50}) // burst 5
	s := blob.Limited(newFS(t), l)
	start := time.Now()
	for i := 0; i < 20; i++ {
		s.Head(context.Background(), "k")
	}
	if el := time.Since(start); el < 280*time.Millisecond {
		t.Errorf("20 requests at 50/s (burst 5) took %v, want >= 300ms", el)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		_, err = s.Head(ctx, "k")
		if errors.Is(err, blob.ErrNotFound) {
			err = nil
		}
	}
	if err == nil {
		t.Error("a request waiting for a token ignored its context")
	}
}

func TestLimiterTransport(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got.Add(n)
		w.Write(make([]byte, 64<<10))
	}))
	defer srv.Close()
	l := blob.NewLimiter(blob.Limits{UploadBytesPerSecond: 256 << 10, DownloadBytesPerSecond: 256 << 10, RequestsPerSecond: 100})
	c := &http.Client{Transport: l.Transport(http.DefaultTransport)}
	start := time.Now()
	resp, err := c.Post(srv.URL, "application/octet-stream", bytes.NewReader(make([]byte, 128<<10)))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// 128 KiB up + 64 KiB down at 256 KiB/s each (32 KiB bursts): >= 0.5 s.
	if el := time.Since(start); el < 450*time.Millisecond {
		t.Errorf("paced request took %v", el)
	}
	if got.Load() != 128<<10 || n != 64<<10 {
		t.Errorf("bytes up %d down %d", got.Load(), n)
	}
	if blob.NewLimiter(blob.Limits{}) != nil {
		t.Error("zero limits should give a nil limiter")
	}
	var nilL *blob.Limiter
	if nilL.Transport(http.DefaultTransport) != http.DefaultTransport {
		t.Error("nil limiter should not wrap")
	}
}

// Parts keeps at most InFlight parts in flight and stores them in order.
func TestPartsInFlight(t *testing.T) {
	s := memblob.New()
	s.PartDelay = 20 * time.Millisecond
	ctx := context.Background()
	var started, done atomic.Int32
	p, err := blob.StartParts(ctx, s, "k", blob.PutOptions{}, blob.PartsOptions{
		InFlight: 3,
		OnStart:  func(int) { started.Add(1) },
		OnDone:   func(_, size int, _ time.Duration, err error) { done.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	var released atomic.Int32
	for n := 1; n <= 7; n++ {
		part := bytes.Repeat([]byte{byte(n)}, 1000+n)
		want = append(want, part...)
		if err := p.Send(ctx, n, part, func() { released.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	a, err := p.Complete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.Object("k"); !bytes.Equal(got, want) || a.Size != int64(len(want)) {
		t.Errorf("stored %d bytes (attrs %d), want %d in part order", len(got), a.Size, len(want))
	}
	if peak := s.PeakPartsInFlight(); peak != 3 {
		t.Errorf("peak parts in flight = %d, want 3", peak)
	}
	if released.Load() != 7 || started.Load() != 7 || done.Load() != 7 {
		t.Errorf("released %d, started %d, done %d; want 7 each", released.Load(), started.Load(), done.Load())
	}
	if err := p.Abort(ctx); err != nil || s.Count(blob.OpAbortMultipart) != 0 {
		t.Errorf("Abort after Complete: %v, %d abort requests; want a no-op", err, s.Count(blob.OpAbortMultipart))
	}
}

// Timings splits Complete into the wait for the parts still uploading and
// the store's completion.
func TestPartsTimings(t *testing.T) {
	s := memblob.New()
	s.PartDelay = 30 * time.Millisecond
	ctx := context.Background()
	p, err := blob.StartParts(ctx, s, "k", blob.PutOptions{}, blob.PartsOptions{InFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(ctx, 1, []byte("part"), nil); err != nil {
		t.Fatal(err)
	}
	if w, c := p.Timings(); w != 0 || c != 0 {
		t.Fatalf("before Complete: %v, %v; want zeros", w, c)
	}
	if _, err := p.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	// The part sleeps 30 ms from its start, which comes right after Send.
	if w, c := p.Timings(); w < 15*time.Millisecond || w > 10*time.Second || c <= 0 {
		t.Errorf("parts wait %v, completion %v; want the part's delay and a completion", w, c)
	}
}

// The first failed part cancels the others and fails Send and Complete;
// Abort then leaves nothing, and every buffer is released once.
func TestPartsFirstFailureStopsTheRest(t *testing.T) {
	s := memblob.New()
	s.PartDelay = 5 * time.Millisecond
	boom := errors.New("disk on fire")
	s.Hook = func(op, _ string, part int) error {
		if op == blob.OpUploadPart && part == 2 {
			return boom
		}
		return nil
	}
	ctx := context.Background()
	p, err := blob.StartParts(ctx, s, "k", blob.PutOptions{}, blob.PartsOptions{InFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	var released atomic.Int32
	var sendErr error
	sent := 0
	for n := 1; n <= 50 && sendErr == nil; n++ {
		sendErr = p.Send(ctx, n, make([]byte, 100), func() { released.Add(1) })
		sent++
	}
	if !errors.Is(sendErr, boom) || !strings.Contains(sendErr.Error(), "part 2") {
		t.Fatalf("Send after part 2 failed: %v (after %d sends), want the part-2 error", sendErr, sent)
	}
	if _, err := p.Complete(ctx); !errors.Is(err, boom) {
		t.Errorf("Complete: %v, want the part-2 error", err)
	}
	if err := p.Abort(ctx); err != nil {
		t.Errorf("Abort: %v", err)
	}
	if int(released.Load()) != sent {
		t.Errorf("%d buffers released, %d sent", released.Load(), sent)
	}
	if ups, _ := s.ListMultipart(ctx, ""); len(ups) != 0 || s.Count(blob.OpCompleteMultipart) != 0 {
		t.Errorf("after Abort: uploads %+v, %d complete requests", ups, s.Count(blob.OpCompleteMultipart))
	}
	if _, _, ok := s.Object("k"); ok {
		t.Error("object created")
	}
}

// Abort cancels parts in flight, and a failed abort is reported with the
// upload id and leaves the upload listed for a sweeper.
func TestPartsAbort(t *testing.T) {
	s := memblob.New()
	s.PartDelay = time.Hour // only cancellation ends a part
	ctx := context.Background()
	p, err := blob.StartParts(ctx, s, "k", blob.PutOptions{}, blob.PartsOptions{InFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	var parts sync.WaitGroup
	parts.Add(2)
	for n := 1; n <= 2; n++ {
		if err := p.Send(ctx, n, make([]byte, 10), parts.Done); err != nil {
			t.Fatal(err)
		}
	}
	// A third Send waits for a free slot; its ctx ends the wait.
	wctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Send(wctx, 3, make([]byte, 10), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Send with no free slot and a cancelled ctx: %v", err)
	}
	if err := p.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	parts.Wait() // both released: the parts were cancelled
	if ups, _ := s.ListMultipart(ctx, ""); len(ups) != 0 {
		t.Errorf("uploads left: %+v", ups)
	}
	if err := p.Send(ctx, 3, make([]byte, 10), nil); err == nil {
		t.Error("Send after Abort succeeded")
	}

	s2 := memblob.New()
	s2.Hook = func(op, _ string, _ int) error {
		if op == blob.OpAbortMultipart {
			return errors.New("store unreachable")
		}
		return nil
	}
	p2, err := blob.StartParts(ctx, s2, "k2", blob.PutOptions{}, blob.PartsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = p2.Abort(ctx)
	if err == nil || !strings.Contains(err.Error(), p2.UploadID()) || !strings.Contains(err.Error(), "store unreachable") {
		t.Errorf("failed abort: %v, want the upload id and the cause", err)
	}
	if ups, _ := s2.ListMultipart(ctx, "k2"); len(ups) != 1 || ups[0].UploadID != p2.UploadID() {
		t.Errorf("upload after a failed abort: %+v, want it listed for the sweeper", ups)
	}
}

// Complete gives up on parts in flight when its ctx ends.
func TestPartsCompleteCancelled(t *testing.T) {
	s := memblob.New()
	s.PartDelay = time.Hour
	p, err := blob.StartParts(context.Background(), s, "k", blob.PutOptions{}, blob.PartsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(context.Background(), 1, make([]byte, 10), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	if _, err := p.Complete(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Complete with a cancelled ctx: %v", err)
	}
	if s.Count(blob.OpCompleteMultipart) != 0 {
		t.Error("upload completed with a part cancelled")
	}
	if err := p.Abort(context.Background()); err != nil {
		t.Error(err)
	}
}

// silentStore says nothing about part CRC-32Cs (no PartCRC32CUser).
type silentStore struct{ blob.Store }

// Every store says whether it uses a part CRC-32C, and every wrapper
// (limiter, metrics, both) answers for the store it wraps; a store that
// says nothing counts as using it.
func TestUsesPartCRC32C(t *testing.T) {
	m, err := blob.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	l := blob.NewLimiter(blob.Limits{RequestsPerSecond: 1000})
	for _, tc := range []struct {
		name string
		s    blob.Store
		want bool
	}{
		{"fs", newFS(t), false},
		{"memblob", memblob.New(), true},
		{"silent fs", silentStore{newFS(t)}, true},
	} {
		for _, w := range []struct {
			name string
			s    blob.Store
		}{
			{"bare", tc.s},
			{"limited", blob.Limited(tc.s, l)},
			{"metrics", m.Wrap(tc.s)},
			{"metrics over limited", m.Wrap(blob.Limited(tc.s, l))},
		} {
			if got := blob.UsesPartCRC32C(w.s); got != tc.want {
				t.Errorf("%s, %s: UsesPartCRC32C = %v, want %v", tc.name, w.name, got, tc.want)
			}
		}
	}
}
