package offloader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
)

const (
	secretKey   = "SECRET-KEY-4d1f0b7e"
	secretToken = "eyJhbGciOiJIUzI1NiJ9.SECRET-TOKEN"
	secretPass  = "bk-SECRET-password"
	secretZK    = "tierkeeper:zk-SECRET-pw"
	accessKey   = "AKIA-access-id"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func files(m map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		v, ok := m[p]
		if !ok {
			return nil, &os.PathError{Op: "open", Path: p, Err: os.ErrNotExist}
		}
		return []byte(v), nil
	}
}

var testOpts = ParseOptions{
	Getenv:   env(map[string]string{"S3_ACCESS_KEY_ID": accessKey, "BK_PASSWORD": secretPass, "ZK_DIGEST": secretZK}),
	ReadFile: files(map[string]string{"/etc/tierkeeper/s3/secret_access_key": secretKey + "\n", "/etc/tierkeeper/pulsar/token": secretToken}),
}

func TestExampleConfigParses(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "configs", "offloader.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(b, testOpts)
	if err != nil {
		t.Fatalf("configs/offloader.yaml: %v", err)
	}
	p, err := c.Store.Client().Provider()
	if err != nil {
		t.Fatal(err)
	}
	sc := p.(*s3.Config)
	if sc.Credentials.SecretAccessKey.Reveal() != secretKey || sc.Credentials.AccessKeyID != accessKey {
		t.Errorf("store credentials not resolved from !env/!file: id %q", sc.Credentials.AccessKeyID)
	}
	if c.Admin.Token.Reveal() != secretToken {
		t.Error("admin token not read from !file")
	}
	rules, err := c.PolicyRules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules.Rules) != 2 || rules.Rules[0].Name != "orders" || rules.Rules[0].After != time.Hour ||
		rules.Rules[0].KeepBytes != 10<<30 || rules.Rules[0].DeletionLag != (policy.DeletionLag{Mode: policy.LagAfter, After: 4 * time.Hour}) ||
		rules.Rules[0].BlockSize != 16<<20 || rules.Rules[0].Verify != "full" || !rules.Rules[0].Pressure {
		t.Errorf("orders rule = %+v", rules.Rules[0])
	}
	if r := rules.Rules[1]; r.Offload || r.After != 24*time.Hour || r.Verify != "full" {
		t.Errorf("audit rule (inherits from the default) = %+v", r)
	}
	if d := rules.Default; d.KeepBytes != -1 || d.KeepLedgers != -1 || d.DeletionLag.Mode != policy.LagBroker || d.Name != "default" {
		t.Errorf("default rule = %+v", d)
	}
	if rules.MinReloadInterval != DefaultMinReloadInterval || rules.Default.Verify != policy.VerifyFull {
		t.Errorf("reload bound %s, default verify %q: want %s and the pipeline's default, full", rules.MinReloadInterval, rules.Default.Verify, DefaultMinReloadInterval)
	}
	if c.Scheduler.StopTimeout.D() != time.Minute || c.Pressure.Threshold != 0.85 || c.Sweeper.Grace.D() != 24*time.Hour {
		t.Errorf("values: %+v %+v", c.Scheduler, c.Sweeper)
	}
}

const minimal = `
zookeeper:
  servers: 127.0.0.1:2181
store:
  type: fs
  config:
    dir: /tmp/x
`

func TestDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.ZooKeeper.SessionTimeout.D() != 30*time.Second || c.HTTP.Listen != ":8090" || c.Scheduler.LedgersInFlight != 2 ||
		c.Leases.Root != "/tierkeeper/leases" || c.Leases.ID == "" || c.Driver.Name != "aws-s3" || c.Discovery.Concurrency != 32 ||
		c.ZooKeeper.MaxBufferSize != 16<<20 || c.Scrub.LedgerTimeout.D() != 2*time.Minute {
		t.Errorf("defaults: %+v", c)
	}
	rules, err := c.PolicyRules()
	if err != nil {
		t.Fatal(err)
	}
	if d := rules.Default; !d.Offload || d.After != 24*time.Hour || d.KeepBytes != -1 || !d.Pressure {
		t.Errorf("default rule: %+v", d)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		opts      ParseOptions
		want      []string
	}{
		{"typo at top level", minimal + "schedular:\n  interval: 1m\n", ParseOptions{},
			[]string{`line 7: unknown key "schedular" at the top level (did you mean "scheduler"?)`}},
		{"typo nested", minimal + "scheduler:\n  ledgers_inflight: 3\n", ParseOptions{},
			[]string{`line 8: unknown key "ledgers_inflight" in scheduler (did you mean "ledgers_in_flight"?)`}},
		{"typo in a rule", minimal + "policy:\n  rules:\n    - name: a\n      match: [t]\n      aftr: 1h\n", ParseOptions{},
			[]string{`line 11: unknown key "aftr" in policy.rules[0] (did you mean "after"?)`}},
		{"typo in the store's provider section", `
zookeeper: {servers: "127.0.0.1:2181"}
store:
  type: s3
  config:
    bucket: b
    adressing: path
`, ParseOptions{}, []string{`line 6: unknown key "adressing" in store.config (did you mean "addressing"?)`}},
		{"unrelated key lists the known ones", minimal + "zookeeper2: x\n", ParseOptions{},
			[]string{`unknown key "zookeeper2"`}},
		{"several problems at once", minimal + "http:\n  lisen: x\nsweeper:\n  graze: 1h\n", ParseOptions{},
			[]string{`line 8: unknown key "lisen"`, `line 10: unknown key "graze"`}},
		{"bad duration", minimal + "scheduler:\n  interval: 5 minutes\n", ParseOptions{},
			[]string{`line 8: "5 minutes" is not a duration`}},
		{"bad size", minimal + "policy:\n  default:\n    keep_bytes: lots\n", ParseOptions{},
			[]string{`line 9: "lots" is not a size`}},
		{"bad deletion lag", minimal + "policy:\n  default:\n    deletion_lag: soon\n", ParseOptions{},
			[]string{`deletion_lag "soon": want broker, never or a duration`}},
		{"missing env", minimal + "admin:\n  url: http://b:8080\n  token: !env NO_SUCH_VAR\n", ParseOptions{Getenv: env(nil)},
			[]string{`line 9: !env "NO_SUCH_VAR": environment variable is not set or empty`}},
		{"missing file", minimal + "admin:\n  token: !file /nope/token\n", ParseOptions{ReadFile: files(nil)},
			[]string{`line 8: !file "/nope/token"`, "file does not exist"}},
		{"validation names keys", `
zookeeper: {servers: "", max_buffer_size: 64KiB}
scheduler: {ledgers_in_flight: -1, retry_initial: 1h, retry_max: 1m}
admin: {url: "ftp://x"}
pressure: {threshold: 85}
sweeper: {grace: 1s}
scrub: {ledger_timeout: -1m}
discovery: {sessions: 17}
bookkeeper: {wire_protocol: v4}
`, ParseOptions{}, []string{"discovery.sessions 17: want 1 to 16", `bookkeeper.wire_protocol "v4": want v2 or v3`, "scrub.ledger_timeout must be positive", "zookeeper.servers is required", "zookeeper.max_buffer_size 64KiB: want 1MiB to 1GiB", "store is required", "scheduler.ledgers_in_flight -1",
			"scheduler.retry_max 1m0s is below scheduler.retry_initial 1h0m0s", `admin.url "ftp://x"`,
			"pressure.threshold 85: want a usage ratio", "sweeper.grace 1s"}},
		{"pressure without a source", minimal + "pressure: {threshold: 0.9}\n", ParseOptions{},
			[]string{"no source: set pressure.agent_url"}},
		{"rule problems", minimal + "policy:\n  rules:\n    - name: x\n      after: 1h\n    - name: y\n      match: [\"a/[b\"]\n      verify: sometimes\n", ParseOptions{},
			[]string{"rule 1 (x): match is required", `rule 2 (y): match "a/[b"`, `verify "sometimes"`}},
		{"store errors come from the blob parser", "zookeeper: {servers: \"127.0.0.1:2181\"}\nstore:\n  type: gcs\n  config: {}\n", ParseOptions{},
			[]string{"line 3: store: blob config: key type must be fs, s3 or cos"}},
		{"two documents", minimal + "---\nzookeeper: {servers: x}\n", ParseOptions{}, []string{"a second YAML document"}},
		{"driver bucket differs from the store's", driverBucketDoc("other"), ParseOptions{},
			[]string{`driver.bucket "other" differs from the store's bucket "pulsar-offload" (store.config.bucket)`}},
		{"not YAML", "zookeeper: [\n", ParseOptions{}, []string{"yaml:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(strings.TrimPrefix(tc.doc, "\n")), tc.opts)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error does not wrap ErrConfig: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// driverBucketDoc is a config with an s3 store (bucket pulsar-offload)
// and driver.bucket set to bucket.
func driverBucketDoc(bucket string) string {
	return `
zookeeper: {servers: "127.0.0.1:2181"}
store:
  type: s3
  config: {bucket: pulsar-offload, region: us-east-1, endpoint: "http://127.0.0.1:9000"}
driver: {bucket: ` + bucket + `}
`
}

// driver.bucket equal to the store's bucket is accepted (it changes
// nothing); a different one is refused (TestParseErrors).
func TestDriverBucketMatchingTheStore(t *testing.T) {
	c, err := Parse([]byte(driverBucketDoc("pulsar-offload")), ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Driver.Bucket != "pulsar-offload" {
		t.Fatalf("driver.bucket %q", c.Driver.Bucket)
	}
}

// TestSecretsNeverRendered renders a config holding every kind of secret
// in every way a program might print it, and scans for the values.
func TestSecretsNeverRendered(t *testing.T) {
	doc := `
zookeeper: {servers: "127.0.0.1:2181", digest: !env ZK_DIGEST}
bookkeeper:
  password: !env BK_PASSWORD
store:
  type: s3
  config:
    bucket: b
    endpoint: http://127.0.0.1:9000
    credentials:
      source: static
      access_key_id: !env S3_ACCESS_KEY_ID
      secret_access_key: !file /etc/tierkeeper/s3/secret_access_key
      session_token: inline-SECRET-session
admin:
  url: http://broker:8080
  token: !file /etc/tierkeeper/pulsar/token
`
	c, err := Parse([]byte(doc), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf, jsonLogBuf bytes.Buffer
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("config", "cfg", c, "admin", c.Admin, "store", c.Store)
	slog.New(slog.NewJSONHandler(&jsonLogBuf, nil)).Info("config", "cfg", c, "admin", c.Admin, "store", c.Store)
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	ym, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	renderings := map[string]string{
		"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
		"%v value": fmt.Sprintf("%v", *c), "%+v value": fmt.Sprintf("%+v", *c), "%#v value": fmt.Sprintf("%#v", *c),
		"%s store": fmt.Sprintf("%s", c.Store), "%#v store": fmt.Sprintf("%#v", c.Store), "%q token": fmt.Sprintf("%q", c.Admin.Token),
		"%x token": fmt.Sprintf("%x", c.Admin.Token), "%v bookkeeper": fmt.Sprintf("%+v", c.BookKeeper),
		"Render": c.Render(), "json": string(js), "yaml": string(ym), "slog text": logBuf.String(), "slog json": jsonLogBuf.String(),
	}
	for name, out := range renderings {
		for _, s := range []string{secretKey, secretToken, secretPass, "inline-SECRET-session", "zk-SECRET-pw"} {
			if strings.Contains(out, s) {
				t.Errorf("%s rendering contains the secret %q:\n%s", name, s, out)
			}
		}
	}
	if !strings.Contains(c.Render(), "<redacted>") || !strings.Contains(c.Render(), "bucket: b") {
		t.Errorf("Render does not show the redacted config:\n%s", c.Render())
	}
	// The access key id is an identifier, not a secret: it stays visible.
	if !strings.Contains(c.Render(), accessKey) {
		t.Errorf("Render hides the access key id:\n%s", c.Render())
	}
}

// TestSecretsNeverInErrors puts secrets where they cause errors.
func TestSecretsNeverInErrors(t *testing.T) {
	docs := []string{
		// A secret read into a numeric field: the decoder quotes the value.
		minimal + "scheduler:\n  ledgers_in_flight: !env BK_PASSWORD\n",
		// A secret in a duration.
		minimal + "scheduler:\n  interval: !file /etc/tierkeeper/pulsar/token\n",
		// A secret as an unknown key's value and a bad URL.
		minimal + "admin:\n  url: !env BK_PASSWORD\n",
		// A digest that is not user:password.
		strings.Replace(minimal, "zookeeper:", "zookeeper:\n  digest: !env BK_PASSWORD", 1),
	}
	for i, d := range docs {
		_, err := Parse([]byte(d), testOpts)
		if err == nil {
			t.Fatalf("doc %d accepted", i)
		}
		for _, s := range []string{secretToken, secretPass, "zk-SECRET-pw"} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("doc %d: error contains the secret: %v", i, err)
			}
		}
		if !strings.Contains(err.Error(), "line ") && !strings.Contains(err.Error(), "admin.url") && !strings.Contains(err.Error(), "zookeeper.digest") {
			t.Errorf("doc %d: error does not say where: %v", i, err)
		}
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte(minimal+"bogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), `unknown key "bogus"`) {
		t.Errorf("Load = %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestURLPasswordsRedacted: a password in a pressure URL (agent_url,
// agent_urls, prometheus.url) or in a bad admin.url never appears in a
// rendering of the config nor in a validation error, which still name
// the host and port.
func TestURLPasswordsRedacted(t *testing.T) {
	const pw = "SECRET-url-pw"
	doc := minimal + `
pressure:
  threshold: 0.9
  agent_url: "http://tk:` + pw + `@{host}:8000/report"
  agent_urls: {"b1:3181": "http://tk:` + pw + `@agent-b1:8001/report"}
`
	c, err := Parse([]byte(doc), testOpts)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var logBuf bytes.Buffer
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("config", "cfg", c, "pressure", c.Pressure)
	prom := c.Pressure
	prom.AgentURL, prom.AgentURLs, prom.Prometheus.URL = "", nil, "https://tk:"+pw+"@prom:9090"
	for name, out := range map[string]string{"Render": c.Render(), "json": strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(js)), "%v": fmt.Sprintf("%v", c),
		"%+v": fmt.Sprintf("%+v", *c), "%#v pressure": fmt.Sprintf("%#v", c.Pressure), "slog": logBuf.String()} {
		if strings.Contains(out, pw) || !strings.Contains(out, "<redacted>@{host}:8000/report") || !strings.Contains(out, "<redacted>@agent-b1:8001/report") {
			t.Errorf("%s rendering:\n%s", name, out)
		}
	}
	if out := fmt.Sprintf("%+v", prom); strings.Contains(out, pw) || !strings.Contains(out, "https://<redacted>@prom:9090") {
		t.Errorf("prometheus url rendering: %s", out)
	}
	if c.Pressure.AgentURLs["b1:3181"] != "http://tk:"+pw+"@agent-b1:8001/report" {
		t.Errorf("rendering changed the config: %v", c.Pressure.AgentURLs)
	}

	for bad, where := range map[string]string{
		"pressure: {threshold: 0.9, agent_url: \"http://tk:" + pw + "@agents:8000/report\"}\n": "@agents:8000/report",
		"driver: {service_endpoint: \"https://tk:" + pw + "@s3.example:9000\"}\n":              "@s3.example:9000",
		"admin: {url: \"ftp://tk:" + pw + "@broker:8080\"}\n":                                  "@broker:8080",
		"admin: {url: \"http://tk:" + pw + "@broker:80x\"}\n":                                  "@broker:80x",
	} {
		_, err := Parse([]byte(minimal+bad), testOpts)
		if err == nil || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "<redacted>"+where) {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

// TestCheckAdminTargetRedacted: the admin check's target (what --check
// prints) never shows a password put in the URL of a config that did not
// go through Validate.
func TestCheckAdminTargetRedacted(t *testing.T) {
	c := &Config{Admin: Admin{URL: "http://tk:SECRET-admin-pw@127.0.0.1:1", Timeout: Duration(time.Second)}}
	r := checkAdmin(t.Context(), PeersConfig{Admin: c.Admin.brokerConfig()}, slog.New(slog.DiscardHandler))
	if s := r.Target + " " + r.Detail; r.OK || strings.Contains(s, "SECRET-admin-pw") || r.Target != "http://<redacted>@127.0.0.1:1" {
		t.Errorf("admin check %+v", r)
	}
}
