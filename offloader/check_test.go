package offloader

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func checkConfig(t *testing.T, zkAddr string, s3 *testenv.S3, bucket, adminURL string) *Config {
	t.Helper()
	doc := fmt.Sprintf("zookeeper: {servers: %q, connect_timeout: 5s}\n", zkAddr) +
		s3test.StoreYAML(s3, bucket, "TK_SECRET", "  retry: {max_attempts: 1}") +
		fmt.Sprintf("admin: {url: %q, timeout: 500ms, token: !env TK_TOKEN}\n", adminURL)
	c, err := Parse([]byte(doc), ParseOptions{Getenv: env(map[string]string{"TK_SECRET": s3.SecretKey, "TK_TOKEN": "tok-SECRET"})})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func byName(res []CheckResult) map[string]CheckResult {
	m := map[string]CheckResult{}
	for _, r := range res {
		m[r.Name] = r
	}
	return m
}

func TestCheckRealPeers(t *testing.T) {
	z := testenv.StartZooKeeper(t)
	s3 := testenv.StartS3(t)
	bucket := s3.NewBucket(t)

	var gotAuth string
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		if r.URL.Path != "/admin/v2/brokers/ready" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer admin.Close()

	ctx := context.Background()
	res := byName(Check(ctx, checkConfig(t, z.Addr, s3, bucket, admin.URL), CheckOptions{}))
	for _, n := range []string{"zookeeper", "managed-ledgers", "store", "admin", "pressure"} {
		if !res[n].OK {
			t.Errorf("%s: %+v", n, res[n])
		}
	}
	if gotAuth != "Bearer tok-SECRET" {
		t.Errorf("admin saw Authorization %q", gotAuth)
	}
	if !strings.Contains(res["store"].Target, bucket) || !strings.Contains(res["store"].Detail, "0 objects") {
		t.Errorf("store: %+v", res["store"])
	}
	if !res["pressure"].Skipped {
		t.Errorf("pressure should be skipped without a threshold: %+v", res["pressure"])
	}
	// No BookKeeper cluster in this ZooKeeper: the ledgers root is missing.
	if bk := res["bookkeeper-metadata"]; bk.OK || !strings.Contains(bk.Detail, "ledgers root does not exist") {
		t.Errorf("bookkeeper-metadata: %+v", bk)
	}

	// A missing bucket, a refused admin token and a hanging admin URL fail
	// within their bounds and say what they waited for.
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer refuse.Close()
	res = byName(Check(ctx, checkConfig(t, z.Addr, s3, "tk-no-such-bucket-x", refuse.URL), CheckOptions{}))
	if st := res["store"]; st.OK || !strings.Contains(st.Detail, "list (waited up to 30s)") || !strings.Contains(st.Detail, "NoSuchBucket") {
		t.Errorf("missing bucket: %+v", st)
	}
	if a := res["admin"]; a.OK || !strings.Contains(a.Detail, "broker answered 401") {
		t.Errorf("refused token: %+v", a)
	}
	start := time.Now()
	res = byName(Check(ctx, checkConfig(t, z.Addr, s3, bucket, "http://"+testenv.SilentAddr(t)), CheckOptions{}))
	if a := res["admin"]; a.OK || !strings.Contains(a.Detail, "within 500ms") {
		t.Errorf("hanging admin: %+v", a)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("checks took %s", time.Since(start))
	}
	for _, r := range res {
		if strings.Contains(r.Detail, "tok-SECRET") || strings.Contains(r.Detail, s3.SecretKey) {
			t.Errorf("%s detail shows a secret: %s", r.Name, r.Detail)
		}
	}
}

func TestCheckZooKeeperUnreachable(t *testing.T) {
	addr := testenv.ClosedAddr(t)
	c, err := Parse([]byte(fmt.Sprintf("zookeeper: {servers: %q, connect_timeout: 1s}\nstore: {type: fs, config: {dir: %q}}\n", addr, t.TempDir())), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res := byName(Check(context.Background(), c, CheckOptions{}))
	if z := res["zookeeper"]; z.OK || !strings.Contains(z.Detail, "no session within the connect timeout (1s)") {
		t.Errorf("zookeeper: %+v", z)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s with a 1s connect timeout", took)
	}
	if !res["store"].OK || !res["admin"].Skipped {
		t.Errorf("fs store and no admin: %+v", res)
	}
}
