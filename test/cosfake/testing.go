package cosfake

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Test defaults: the APPID and region the fake serves.
const (
	TestAppID  = "1250000000"
	TestRegion = "ap-guangzhou"
)

// Fake is a running cosfake endpoint on 127.0.0.1 backed by the test
// package's shared versitygw.
type Fake struct {
	*Server
	// URL is "http://127.0.0.1:<port>"; Addr "127.0.0.1:<port>".
	URL, Addr string
	Port      int
	// SecretID and SecretKey are valid credentials (random per fake).
	SecretID, SecretKey string
	AppID, Region       string
	S3                  *testenv.S3

	skew atomic.Int64
	seq  atomic.Int64
}

// Start starts a fake in front of testenv.StartS3 (skipping or failing the
// test like StartS3 when versitygw is missing). wrap, if given, wraps the
// handler (fault injection). It is closed when t ends.
func Start(t testing.TB, wrap ...func(http.Handler) http.Handler) *Fake {
	t.Helper()
	srv := testenv.StartS3(t)
	if srv == nil {
		return nil
	}
	f := &Fake{SecretID: "AKID" + strings.ToUpper(newID()), SecretKey: newID() + newID(), AppID: TestAppID, Region: TestRegion, S3: srv}
	s, err := New(Config{
		S3: srv.Client(), Credentials: map[string]string{f.SecretID: f.SecretKey}, AppID: f.AppID, Region: f.Region,
		Now: func() time.Time { return time.Now().Add(time.Duration(f.skew.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Server = s
	var h http.Handler = s
	for _, w := range wrap {
		h = w(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	f.URL = ts.URL
	f.Addr = ts.Listener.Addr().String()
	f.Port = ts.Listener.Addr().(*net.TCPAddr).Port
	return f
}

// SetClockSkew moves the server clock by d (signature time tests).
func (f *Fake) SetClockSkew(d time.Duration) { f.skew.Store(int64(d)) }

// NewBucket creates a fresh bucket "<name>-<appid>" and returns its full
// COS name.
func (f *Fake) NewBucket(t testing.TB) string {
	t.Helper()
	name := testenv.BucketName(t.Name(), fmt.Sprintf("-%d%s-%s", f.seq.Add(1), newID()[:4], f.AppID))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := f.S3.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// BucketURL is the virtual-host URL of bucket on this fake:
// "http://<bucket>.cos.<region>.myqcloud.com:<port>". Dial it with
// DialContext (no DNS needed).
func (f *Fake) BucketURL(bucket string) string {
	return fmt.Sprintf("http://%s.cos.%s.myqcloud.com:%d", bucket, f.Region, f.Port)
}

// DialContext dials the fake whatever host is asked for.
func (f *Fake) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, f.Addr)
}

// Transport returns an HTTP transport that dials the fake.
func (f *Fake) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = f.DialContext
	return t
}

// Recipe is a stock-broker configuration for reading (and writing) COS;
// docs/brokers.md explains both and what is proven.
type Recipe int

const (
	// RecipeAWSS3 (A): driver aws-s3, endpoint cos.<region>.myqcloud.com,
	// virtual-host buckets (-Djclouds.s3.virtual-host-buckets=true),
	// -Djclouds.regions=<region>, SecretId/SecretKey in
	// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY; AWS Signature V4.
	RecipeAWSS3 Recipe = iota
	// RecipeAliyunOSS (B): driver aliyun-oss (jclouds' generic s3 API,
	// virtual-host buckets forced), same endpoint, SecretId/SecretKey in
	// ACCESS_KEY_ID/ACCESS_KEY_SECRET; AWS Signature V2.
	RecipeAliyunOSS
)

func (r Recipe) String() string {
	if r == RecipeAliyunOSS {
		return "aliyun-oss"
	}
	return "aws-s3"
}

// ServiceEndpoint is the COS S3-compatible endpoint of this fake as a
// broker is configured with it: "http://cos.<region>.myqcloud.com:<port>"
// (real COS: https://cos.<region>.myqcloud.com).
func (f *Fake) ServiceEndpoint() string {
	return fmt.Sprintf("http://cos.%s.myqcloud.com:%d", f.Region, f.Port)
}

// BrokerOffload is the offloader configuration with which a stock broker
// reaches bucket on this fake with recipe r. No DNS knows the myqcloud.com
// names here, so the broker's JVM uses the fake as its HTTP proxy
// (-Dhttp.proxyHost/-Dhttp.proxyPort): jclouds sends absolute-form requests
// ("GET http://<bucket>.cos.<region>.myqcloud.com:<port>/<key>") with that
// Host, which the fake serves directly. Loopback addresses bypass the proxy
// (the JVM's default http.nonProxyHosts).
func (f *Fake) BrokerOffload(bucket string, r Recipe) *testenv.BrokerOffload {
	proxy := []string{"-Dhttp.proxyHost=127.0.0.1", fmt.Sprintf("-Dhttp.proxyPort=%d", f.Port)}
	o := &testenv.BrokerOffload{Bucket: bucket, Endpoint: f.ServiceEndpoint()}
	switch r {
	case RecipeAliyunOSS:
		o.Driver = "aliyun-oss"
		o.Env = []string{"ACCESS_KEY_ID=" + f.SecretID, "ACCESS_KEY_SECRET=" + f.SecretKey}
		o.JVMArgs = proxy
	default:
		o.Driver = "aws-s3"
		o.Region = f.Region
		o.Env = []string{"AWS_ACCESS_KEY_ID=" + f.SecretID, "AWS_SECRET_ACCESS_KEY=" + f.SecretKey}
		o.JVMArgs = append([]string{"-Djclouds.s3.virtual-host-buckets=true", "-Djclouds.regions=" + f.Region}, proxy...)
	}
	return o
}
