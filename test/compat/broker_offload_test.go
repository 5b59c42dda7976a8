package compat

// Stock brokers read ledgers that tierkeeper put in an object store (issue
// 8 part 2; docs/brokers.md): messages are produced through a stock Pulsar
// 4.0.8 broker, tierkeeper's pipeline (offloader/pipeline) copies the
// closed ledgers from the bookies into the store in Pulsar's format,
// verifies and commits them and deletes the BookKeeper copies, and the
// broker, restarted, serves every message from the store: versitygw over
// S3, and the COS test endpoint with both COS recipes.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	cosstore "github.com/tierkeeper/tierkeeper/offloader/blob/cos"
	s3store "github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/cosfake"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// goOffload offloads every closed, non-last ledger of topic from the
// bookies to store with tierkeeper's pipeline (offloader/pipeline: copy,
// verify in full, commit with driver d), then trims the BookKeeper copies
// without a reload (the caller unloads the topic). It returns the
// offloaded ledger ids.
func goOffload(t *testing.T, ctx context.Context, topic string, store blob.Store, d mledger.Driver) []int64 {
	t.Helper()
	ml, err := mledger.MLNameForTopic(topic)
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := mlStore(t)
	bk := bkStore(t, sharedBookies(t))
	p, err := pipeline.New(pipeline.Deps{ML: meta, Ledgers: bk, Bookies: bkClient(t, bk, nil), Store: store},
		pipeline.Options{Driver: d, BlockSize: formatBlock, Trim: true, TrimWithoutReload: true})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := meta.Get(ctx, ml)
	if err != nil {
		t.Fatal(err)
	}
	ids := pipeline.Candidates(snap.Info, -1, false)
	tr, err := p.RunTopic(ctx, ml, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, lr := range tr.Ledgers {
		if lr.Outcome != pipeline.OutcomeOffloaded || lr.Verify.Level != pipeline.LevelFull || !lr.Trim.Deleted {
			t.Fatalf("ledger %d: %s, verify %+v, trim %+v", lr.LedgerID, lr.Outcome, lr.Verify, lr.Trim)
		}
		if _, err := bk.ReadLedger(ctx, lr.LedgerID); err == nil {
			t.Fatalf("BookKeeper ledger %d still there after the trim", lr.LedgerID)
		}
	}
	return ids
}

// checkOffloaded checks what the broker says about the offloaded ledgers:
// internal-info (the stored metadata) and, after the broker reloaded the
// topic, internalStats (its in-memory view).
func checkOffloaded(t *testing.T, ctx context.Context, b *testenv.Broker, topic string, ids []int64, stats bool) {
	t.Helper()
	info, err := b.InternalInfo(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[int64]bool{}
	for _, l := range info.Ledgers {
		stored[l.LedgerID] = l.IsOffloaded
	}
	sameOffloaded(t, "internal-info", stored, ids)
	if !stats {
		return
	}
	st, err := b.InternalStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	mem := map[int64]bool{}
	for _, l := range st.Ledgers {
		mem[l.LedgerID] = l.Offloaded
	}
	sameOffloaded(t, "internalStats", mem, ids)
}

// sameOffloaded checks that exactly the ledgers ids are offloaded in got
// (ledger id → offloaded), and that got lists them all.
func sameOffloaded(t *testing.T, what string, got map[int64]bool, ids []int64) {
	t.Helper()
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
		if _, ok := got[id]; !ok {
			t.Fatalf("%s does not list ledger %d", what, id)
		}
	}
	for id, off := range got {
		if off != want[id] {
			t.Fatalf("%s: ledger %d offloaded %v, want %v", what, id, off, want[id])
		}
	}
}

// produceLedgers produces n messages (100 per ledger) and checks they went
// to at least n/100 closed ledgers.
func produceLedgers(t *testing.T, ctx context.Context, b *testenv.Broker, topic string, n int, seed int64) *testenv.Messages {
	t.Helper()
	prod, err := sharedJava(t).Produce(ctx, b, topic, testenv.ProduceOptions{Count: n, Seed: seed, Sizes: []int{10, 1000, 7000, 0, 300}})
	if err != nil {
		t.Fatal(err)
	}
	checkPayloads(t, prod.Messages, seed)
	if l := prod.LedgerIDs()[-1]; len(l) < n/100+1 {
		t.Fatalf("%d messages went to ledgers %v", n, l)
	}
	return prod
}

// readAllFromStore reads topic back from the earliest position and checks
// it equals prod (same ids, payloads, order).
func readAllFromStore(t *testing.T, ctx context.Context, b *testenv.Broker, topic string, prod *testenv.Messages) {
	t.Helper()
	read, err := sharedJava(t).ReadAll(ctx, b, topic, testenv.ReadOptions{Expect: int(prod.Count), Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sameMessages(t, prod, read, true)
}

// TestBrokerReadsGoOffloadS3: recipe for S3 (docs/brokers.md) with the
// package's broker and versitygw. On the way it checks the harness itself:
// unbatched messages land 100 per ledger, a Reader gets them back from the
// bookies, and a restarted broker (same ports, same metadata) serves them.
func TestBrokerReadsGoOffloadS3(t *testing.T) {
	b := sharedBroker(t)
	ctx := t.Context()
	srv := testenv.StartS3(t)
	topic := uniqueTopic(t)
	prod := produceLedgers(t, ctx, b, topic, 350, 21)
	ledgers := prod.LedgerIDs()[-1]
	if len(ledgers) != 4 {
		t.Fatalf("350 unbatched messages at 100 entries per ledger went to ledgers %v, want 4", ledgers)
	}
	for i, m := range prod.Messages {
		if m.EntryID != int64(i%100) || m.LedgerID != ledgers[i/100] || m.Partition != -1 {
			t.Fatalf("message %d at %d:%d (partition %d), want %d:%d", i, m.LedgerID, m.EntryID, m.Partition, ledgers[i/100], i%100)
		}
	}
	t.Logf("produced %d messages into ledgers %v in %.2fs", prod.Count, ledgers, prod.Seconds)
	readAllFromStore(t, ctx, b, topic, prod) // still from the bookies
	checkOffloaded(t, ctx, b, topic, nil, true)

	store, err := s3store.New(ctx, s3test.Config(srv, brokerBucket), s3store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ids := goOffload(t, ctx, topic, store, mledger.Driver{Name: "aws-s3", Bucket: brokerBucket, Region: srv.Region, ServiceEndpoint: srv.Endpoint})
	if len(ids) != 3 || ids[0] != ledgers[0] || ids[2] != ledgers[2] {
		t.Fatalf("offloaded ledgers %v, want the 3 closed ones of %v", ids, ledgers)
	}
	// The stored metadata says offloaded at once; the broker's memory
	// still holds the old view until the topic is reloaded.
	checkOffloaded(t, ctx, b, topic, ids, false)
	if err := b.Unload(ctx, topic); err != nil {
		t.Fatal(err)
	}
	b.Restart(t)
	t.Logf("broker restart took %s", b.StartTimes[len(b.StartTimes)-1].Round(time.Millisecond))
	readAllFromStore(t, ctx, b, topic, prod)
	checkOffloaded(t, ctx, b, topic, ids, true)
	// The summary-only read (make bench-catchup's) gets the same payloads
	// in the same order, keeps no records and times the first message.
	sum, err := sharedJava(t).ReadAll(ctx, b, topic, testenv.ReadOptions{Expect: int(prod.Count), Timeout: 2 * time.Minute, SummaryOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Count != prod.Count || sum.Bytes != prod.Bytes || sum.SHA256OfAllPayloads != prod.SHA256OfAllPayloads || len(sum.Messages) != 0 ||
		sum.FirstMessageSeconds <= 0 || sum.FirstMessageSeconds > sum.Seconds {
		t.Fatalf("summary-only read: %d messages, %d bytes, digest %s, %d records, first message at %.3fs of %.3fs; produced %d, %d, %s",
			sum.Count, sum.Bytes, sum.SHA256OfAllPayloads, len(sum.Messages), sum.FirstMessageSeconds, sum.Seconds, prod.Count, prod.Bytes, prod.SHA256OfAllPayloads)
	}

	// The generic "S3" driver (jclouds' s3 API) reads them too. It takes
	// its credentials from ACCESS_KEY_ID/ACCESS_KEY_SECRET (as aliyun-oss
	// does; AWS_* gives "Couldn't get the access key id") and signs V2
	// unless told otherwise, which versitygw refuses.
	t.Run("driver S3", func(t *testing.T) {
		o := testenv.S3Offload(srv, brokerBucket)
		o.Driver = "S3"
		o.Env = []string{"ACCESS_KEY_ID=" + srv.AccessKey, "ACCESS_KEY_SECRET=" + srv.SecretKey}
		o.JVMArgs = append(o.JVMArgs, "-Djclouds.s3.signer-version=4")
		b := sharedBrokerWith(t, testenv.BrokerOptions{Offload: o})
		read, err := sharedJava(t).ReadAll(ctx, b, topic, testenv.ReadOptions{Expect: int(prod.Count), Timeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("%v\nbroker log:\n%s", err, grepFile(b.LogPath(), "Exception", 20))
		}
		sameMessages(t, prod, read, true)
	})
}

// grepFile returns the last n lines of path containing sub.
func grepFile(path, sub string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return strings.Join(out, "\n")
}

// cosRecorder counts the COS endpoint's requests by signature kind and
// answer, and keeps the refused ones.
type cosRecorder struct {
	mu      sync.Mutex
	counts  map[string]int // "<auth> <method> <status>"
	refused []string
}

func (c *cosRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := "cos"
		switch a := r.Header.Get("Authorization"); {
		case strings.HasPrefix(a, "AWS4-"):
			auth = "sigv4"
		case strings.HasPrefix(a, "AWS "):
			auth = "sigv2"
		}
		chunked := r.Header.Get("X-Amz-Content-Sha256") == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
		sw := &statusWriter{ResponseWriter: w, status: 200}
		h.ServeHTTP(sw, r)
		c.mu.Lock()
		defer c.mu.Unlock()
		if chunked && sw.status == 200 {
			c.counts["aws-chunked"]++
		}
		// The SigV4 credential scope's region (jclouds' choice).
		if _, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential="); ok && auth == "sigv4" {
			if f := strings.Split(cred, "/"); len(f) > 2 {
				c.counts["scope "+f[2]]++
			}
		}
		c.counts[fmt.Sprintf("%s %s %d", auth, r.Method, sw.status)]++
		if sw.status >= 400 && sw.status != 404 {
			c.refused = append(c.refused, fmt.Sprintf("%s %s %s%s -> %d", auth, r.Method, r.Host, r.URL.RequestURI(), sw.status))
		}
	})
}

func (c *cosRecorder) take() (map[string]int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, r := c.counts, c.refused
	c.counts, c.refused = map[string]int{}, nil
	return m, r
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }

// TestBrokerReadsGoOffloadCOS: both COS recipes (docs/brokers.md) against
// the COS test endpoint, which verifies every signature with the account's
// SecretId/SecretKey: tierkeeper writes with the COS API, brokers read
// with AWS Signature V4 (recipe A, aws-s3) and V2 (recipe B, aliyun-oss).
// With recipe A the broker's own offloader also writes to COS (SigV4,
// aws-chunked), and the aliyun-oss broker reads those objects too.
func TestBrokerReadsGoOffloadCOS(t *testing.T) {
	ctx := t.Context()
	rec := &cosRecorder{counts: map[string]int{}}
	f := cosfake.Start(t, rec.wrap)
	bucket := f.NewBucket(t)
	b := sharedBrokerWith(t, testenv.BrokerOptions{Offload: f.BrokerOffload(bucket, cosfake.RecipeAWSS3)})
	t.Logf("broker restarted with COS recipe A in %s", b.StartTimes[len(b.StartTimes)-1].Round(time.Millisecond))
	topic := uniqueTopic(t)
	prod := produceLedgers(t, ctx, b, topic, 350, 22)

	cfg := cosstore.DefaultConfig()
	cfg.Bucket, cfg.Region, cfg.Endpoint = bucket, f.Region, f.BucketURL(bucket)
	cfg.Credentials = cosstore.Credentials{Source: cosstore.SourceStatic, SecretID: f.SecretID, SecretKey: blob.Secret(f.SecretKey)}
	store, err := cosstore.New(cfg, cosstore.Options{DialContext: f.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// The broker uses only the bucket of the stored driver metadata; the
	// rest is recorded as recipe A configures it.
	ids := goOffload(t, ctx, topic, store, mledger.Driver{Name: "aws-s3", Bucket: bucket, Region: f.Region, ServiceEndpoint: f.ServiceEndpoint()})
	if len(ids) != 3 {
		t.Fatalf("offloaded ledgers %v, want the 3 closed ones", ids)
	}
	counts, refused := rec.take()
	if counts["cos PUT 200"] == 0 || len(refused) > 0 {
		t.Fatalf("tierkeeper's COS writes: %v, refused %v", counts, refused)
	}
	if err := b.Unload(ctx, topic); err != nil {
		t.Fatal(err)
	}
	// readWith reads topics back through the broker and checks that it
	// fetched them from COS with the recipe's signatures.
	readWith := func(t *testing.T, r cosfake.Recipe, topics []string, prods []*testenv.Messages, offloaded [][]int64) {
		t.Helper()
		rec.take()
		for i, tp := range topics {
			readAllFromStore(t, ctx, b, tp, prods[i])
			checkOffloaded(t, ctx, b, tp, offloaded[i], true)
		}
		counts, refused := rec.take()
		flavor := map[cosfake.Recipe]string{cosfake.RecipeAWSS3: "sigv4", cosfake.RecipeAliyunOSS: "sigv2"}[r]
		gets, n := counts[flavor+" GET 200"]+counts[flavor+" GET 206"], 0
		for _, o := range offloaded {
			n += len(o)
		}
		t.Logf("COS requests while reading with %s: %v", r, counts)
		if len(refused) > 0 || gets < 2*n {
			t.Fatalf("broker read with %s: %d signed GETs for %d ledgers (want >= index + data per ledger); counts %v; refused %v", r, gets, n, counts, refused)
		}
	}
	// Recipe A: the broker already runs with it; the unload reloads the
	// topic from the new metadata.
	t.Run("read aws-s3", func(t *testing.T) {
		readWith(t, cosfake.RecipeAWSS3, []string{topic}, []*testenv.Messages{prod}, [][]int64{ids})
	})

	// The broker's own offloader writes to COS with recipe A (multipart,
	// aws-chunked SigV4 parts with chunk signatures, index PUT).
	topic2 := uniqueTopic(t)
	var prod2 *testenv.Messages
	var ids2 []int64
	t.Run("broker offload aws-s3", func(t *testing.T) {
		prod2 = produceLedgers(t, ctx, b, topic2, 250, 23)
		st, err := b.InternalStats(ctx, topic2)
		if err != nil {
			t.Fatal(err)
		}
		last := st.Ledgers[len(st.Ledgers)-1].LedgerID
		for _, l := range st.Ledgers[:len(st.Ledgers)-1] {
			ids2 = append(ids2, l.LedgerID)
		}
		rec.take()
		if err := b.OffloadPrefix(ctx, topic2, last, 0); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			s, err := b.OffloadStatus(ctx, topic2)
			if err != nil {
				t.Fatal(err)
			}
			if s.Status == "SUCCESS" {
				break
			}
			if s.Status == "ERROR" || time.Now().After(deadline) {
				_, refused := rec.take()
				t.Fatalf("broker offload to COS: %+v (refused requests %v)", s, refused)
			}
			time.Sleep(300 * time.Millisecond)
		}
		counts, refused := rec.take()
		t.Logf("COS requests of the broker's offload: %v", counts)
		if len(refused) > 0 || counts["sigv4 PUT 200"] == 0 || counts["sigv4 POST 200"] == 0 || counts["aws-chunked"] == 0 {
			t.Fatalf("broker's COS writes: %v, refused %v; ledgers %+v; broker log:\n%s", counts, refused, st.Ledgers, grepFile(b.LogPath(), "ffload", 30))
		}
		checkOffloaded(t, ctx, b, topic2, ids2, true)
	})
	if prod2 == nil || len(ids2) == 0 {
		t.FailNow()
	}

	// Recipe B: a broker restarted with aliyun-oss reads both topics (the
	// driver name stored with the ledgers is not checked).
	t.Run("read aliyun-oss", func(t *testing.T) {
		b.RestartWith(t, testenv.BrokerOptions{Offload: f.BrokerOffload(bucket, cosfake.RecipeAliyunOSS)})
		readWith(t, cosfake.RecipeAliyunOSS, []string{topic, topic2}, []*testenv.Messages{prod, prod2}, [][]int64{ids, ids2})
	})
}
