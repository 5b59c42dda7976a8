package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	s3store "github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Real peers for the package, started once on first use (mltest.Peers):
// ZooKeeper, three bookies, Pulsar's own managed-ledger code (the Java
// tool: ml-write makes the managed ledgers, ml-reopen reads them back
// through Pulsar's reader, offloaded ledgers through the jcloud offloader),
// versitygw.
var (
	env   = mltest.NewPeers("pipeline")
	mlSeq atomic.Int64
)

func TestMain(m *testing.M) { env.Main(m) }

func peers(t *testing.T) {
	t.Helper()
	env.Need(t)
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// uniqueML returns a fresh managed-ledger name.
func uniqueML(t *testing.T) string {
	return fmt.Sprintf("tierkeeper/pipeline/persistent/%s-%d", nonName.ReplaceAllString(t.Name(), "_"), mlSeq.Add(1))
}

// rig is one pipeline's dependencies on the shared peers.
type rig struct {
	zk      *zk.Conn
	sess    *tkzk.Session
	ml      *mledger.Store
	ledgers *metadata.Store
	bk      *client.Client
	store   blob.Store
	bucket  string
	s3      *testenv.S3
}

func newRig(t *testing.T, useS3 bool) *rig {
	t.Helper()
	o := rigOptions{}
	if useS3 {
		peers(t)
		o.s3 = testenv.StartS3(t)
	}
	return newRigWith(t, o)
}

// rigOptions vary newRigWith.
type rigOptions struct {
	s3             *testenv.S3   // nil: an fs store
	zkAddr         string        // default: the shared server
	sessionTimeout time.Duration // default 10 s
	s3Attempts     int           // S3 SDK attempts (default the provider's)
}

func newRigWith(t *testing.T, o rigOptions) *rig {
	t.Helper()
	peers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o.zkAddr == "" {
		o.zkAddr = env.ZK.Addr
	}
	if o.sessionTimeout == 0 {
		o.sessionTimeout = 10 * time.Second
	}
	sess, err := tkzk.Connect(ctx, []string{o.zkAddr}, tkzk.Options{SessionTimeout: o.sessionTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	conn := sess.Conn
	lst, err := metadata.NewStore(ctx, conn, metadata.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bk, err := client.New(client.Options{Resolver: lst})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bk.Close() })
	r := &rig{zk: conn, sess: sess, ml: mledger.New(conn, nil), ledgers: lst, bk: bk}
	if o.s3 != nil {
		r.s3 = o.s3
		r.bucket = r.s3.NewBucket(t)
		cfg := s3store.DefaultConfig()
		cfg.Bucket, cfg.Region, cfg.Endpoint, cfg.Addressing = r.bucket, r.s3.Region, r.s3.Endpoint, "path"
		cfg.Credentials.Source, cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey = s3store.SourceStatic, r.s3.AccessKey, blob.Secret(r.s3.SecretKey)
		cfg.Retry.MaxAttempts = o.s3Attempts
		st, err := s3store.New(ctx, cfg, s3store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.store = st
	} else {
		st, err := fs.New(fs.Config{Dir: t.TempDir(), NoSync: true}, fs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.store, r.bucket = st, "fs"
	}
	t.Cleanup(func() { r.store.Close() })
	return r
}

func (r *rig) driver() mledger.Driver {
	if r.s3 != nil {
		return mledger.Driver{Name: "aws-s3", Bucket: r.bucket, Region: r.s3.Region, ServiceEndpoint: r.s3.Endpoint}
	}
	return mledger.Driver{Name: "aws-s3", Bucket: r.bucket}
}

// pipeline builds a Pipeline on the rig; tweak adjusts deps and options.
func (r *rig) pipeline(t *testing.T, tweak func(*Deps, *Options)) *Pipeline {
	t.Helper()
	d := Deps{ML: r.ml, Ledgers: r.ledgers, Bookies: r.bk, Store: r.store,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if testing.Verbose() {
		d.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	o := Options{Driver: r.driver(), BlockSize: format.MinPartSize}
	if tweak != nil {
		tweak(&d, &o)
	}
	p, err := New(d, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// info reads the managed ledger.
func (r *rig) info(t *testing.T, name string) *mledger.Snapshot {
	t.Helper()
	snap, err := r.ml.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// topic writes a fresh managed ledger (entries entries of size bytes,
// perLedger to a ledger) and returns its name and offload candidates.
func (r *rig) topic(t *testing.T, entries, perLedger, size int) (string, []int64) {
	t.Helper()
	name := uniqueML(t)
	env.MLWrite(t, name, entries, perLedger, size)
	return name, Candidates(r.info(t, name).Info, -1, false)
}

// raw is the znode's bytes and version (to assert that nothing changed).
func (r *rig) raw(t *testing.T, name string) ([]byte, int32) {
	t.Helper()
	data, st, err := r.zk.Get(mledger.Path(name))
	if err != nil {
		t.Fatal(err)
	}
	return data, st.Version
}

// keys lists the store.
func (r *rig) keys(t *testing.T) []string {
	t.Helper()
	var ks []string
	if err := r.store.Iter(context.Background(), "", func(a blob.Attrs) error {
		ks = append(ks, a.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sort.Strings(ks)
	return ks
}

// checkInvariants asserts what must hold for every managed ledger after any
// run, complete or not: every complete ledger's two objects exist and
// decode to its entries; the store holds no other object than those of the
// attempts recorded in the metadata (at most one pair per ledger) and no
// incomplete multipart upload; the last ledger has no offload context.
func (r *rig) checkInvariants(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	snap := r.info(t, name)
	ls := snap.Info.GetLedgerInfo()
	want := map[string]bool{}
	for i, li := range ls {
		oc := li.GetOffloadContext()
		if i == len(ls)-1 && oc != nil {
			t.Errorf("last ledger %d has an offload context %v", li.GetLedgerId(), oc)
		}
		id, ok := mledger.AttemptUUID(oc)
		if !ok {
			continue
		}
		dk, ik := format.DataKey(id, li.GetLedgerId()), format.IndexKey(id, li.GetLedgerId())
		if oc.GetComplete() {
			want[dk], want[ik] = true, true
			rd, err := format.Open(ctx, r.store, id, li.GetLedgerId(), nil)
			if err != nil {
				t.Fatalf("complete ledger %d: %v", li.GetLedgerId(), err)
			}
			var n, b int64
			err = rd.Read(ctx, 0, rd.LastEntryID(), func(_ int64, p []byte) error { n++; b += int64(len(p)); return nil })
			rd.Close()
			if err != nil || n != li.GetEntries() || b != li.GetSize() {
				t.Fatalf("complete ledger %d: objects hold %d entries / %d bytes (%v), metadata %d / %d",
					li.GetLedgerId(), n, b, err, li.GetEntries(), li.GetSize())
			}
		} else {
			// An unfinished attempt may have left its objects (crash after
			// the upload); they are referenced, so the next run uses them.
			want[dk], want[ik] = true, true
		}
	}
	for _, k := range r.keys(t) {
		if !want[k] {
			t.Errorf("object %s is referenced by no ledger of %s", k, name)
		}
	}
	if mpl, ok := r.store.(blob.MultipartLister); ok {
		ups, err := mpl.ListMultipart(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range ups {
			t.Errorf("incomplete multipart upload %s of %s left behind", u.UploadID, u.Key)
		}
	}
}

// states returns the ledgers' states, for messages.
func states(snap *mledger.Snapshot) string {
	var b strings.Builder
	for i, s := range mledger.States(snap.Info) {
		fmt.Fprintf(&b, "%d:%s ", snap.Info.GetLedgerInfo()[i].GetLedgerId(), s)
	}
	return b.String()
}

func isStepErr(err error, s Step) bool {
	var se *StepError
	return errors.As(err, &se) && se.Step == s
}
