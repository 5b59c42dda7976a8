package offloader

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
)

// ErrConfig is wrapped by every error Parse and Validate return.
var ErrConfig = errors.New("offloader config")

// Config is the offload service's configuration (configs/offloader.yaml is
// the commented example). Parse reads it strictly: an unknown key is an
// error naming the key and its line. Secrets (store credentials, the admin
// token, the BookKeeper password) may be given inline or, better, with the
// tags `!env NAME` and `!file PATH`; they never appear in errors or in any
// rendering of the config (fmt, JSON, YAML, slog).
type Config struct {
	ZooKeeper  ZooKeeper  `yaml:"zookeeper"`
	BookKeeper BookKeeper `yaml:"bookkeeper"`
	Store      Store      `yaml:"store"`
	Driver     Driver     `yaml:"driver"`
	Admin      Admin      `yaml:"admin"`
	HTTP       HTTP       `yaml:"http"`
	Discovery  Discovery  `yaml:"discovery"`
	Scheduler  Scheduler  `yaml:"scheduler"`
	Leases     Leases     `yaml:"leases"`
	Pressure   Pressure   `yaml:"pressure"`
	Policy     Policy     `yaml:"policy"`
	Sweeper    Sweeper    `yaml:"sweeper"`
	Scrub      Scrubber   `yaml:"scrub"`
	Metrics    Metrics    `yaml:"metrics"`
}

// ZooKeeper is where Pulsar's and BookKeeper's metadata live.
type ZooKeeper struct {
	// Servers is host:port[,host:port...], optionally with a /root suffix
	// naming the BookKeeper ledgers root, or a metadata service URI
	// (zk+hierarchical://..., metadata-store:zk:...). Required.
	Servers string `yaml:"servers"`
	// SessionTimeout is the ZooKeeper session timeout. Default 30s.
	SessionTimeout Duration `yaml:"session_timeout"`
	// ConnectTimeout bounds the wait for a session at start. Default 30s.
	ConnectTimeout Duration `yaml:"connect_timeout"`
	// MaxBufferSize bounds one ZooKeeper reply (a namespace's topic
	// listing, a managed ledger's value); a larger one fails the read with
	// an error naming the path. Default 16MiB: a namespace of 100 000
	// topics with names up to 160 bytes.
	MaxBufferSize Size `yaml:"max_buffer_size"`
	// MLChroot is the chroot of Pulsar's metadataStoreUrl, if any.
	MLChroot string `yaml:"ml_chroot"`
	// ConfigChroot is the chroot of Pulsar's configurationMetadataStoreUrl
	// (namespace policies live there); default MLChroot.
	ConfigChroot string `yaml:"config_chroot"`
	// Digest is "user:password" for ZooKeeper digest authentication (use
	// !env or !file). The leases tierkeeper creates are then writable only
	// by this user (and readable by all).
	Digest blob.Secret `yaml:"digest"`
	// TLS connects to ZooKeeper's secure client port.
	TLS ZooKeeperTLS `yaml:"tls"`
}

// ZooKeeperTLS is TLS to ZooKeeper's secureClientPort, as the Java
// clients' zookeeper.client.secure and zookeeper.ssl.* settings configure
// it, with PEM files.
type ZooKeeperTLS struct {
	// Enabled turns TLS on (zookeeper.client.secure=true); servers must
	// then name the secure port.
	Enabled bool `yaml:"enabled"`
	// CAFile is the PEM CA bundle (zookeeper.ssl.trustStore.location).
	// Default: the system roots.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are the PEM client certificate and key
	// (zookeeper.ssl.keyStore.location), for servers with
	// ssl.clientAuth=need.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// HostnameVerification checks the server certificate's names against
	// the host in servers (zookeeper.ssl.hostnameVerification). Default
	// true.
	HostnameVerification *bool `yaml:"hostname_verification"`
}

// Files returns the PEM files of the section.
func (t ZooKeeperTLS) Files() tlsfiles.Files {
	return tlsfiles.Files{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile,
		SkipHostnameVerification: t.HostnameVerification != nil && !*t.HostnameVerification}
}

// BookKeeper configures reading ledgers from the bookies.
type BookKeeper struct {
	// LedgersRoot overrides the ledgers root znode (default: from
	// zookeeper.servers, else /ledgers).
	LedgersRoot string `yaml:"ledgers_root"`
	// Digest and Password are used only for ledgers whose metadata does
	// not record them (v1 metadata). Pulsar's default is CRC32C and "".
	Digest   string      `yaml:"digest"`
	Password blob.Secret `yaml:"password"`
	// TLS secures the connections to the bookies (START_TLS, then TLS).
	TLS BookKeeperTLS `yaml:"tls"`
	// WireProtocol is the protocol of the reads: v2 (the default, as
	// Pulsar's brokers read with useV2WireProtocol) or v3.
	WireProtocol string `yaml:"wire_protocol"`
}

// BookKeeperTLS is TLS to the bookies with the settings Pulsar's broker
// names bookkeeperTLS* (PEM only).
type BookKeeperTLS struct {
	// Enabled turns TLS on (the broker's bookkeeperTLSProviderFactoryClass
	// with the bookies' tlsProviderFactoryClass set).
	Enabled bool `yaml:"enabled"`
	// ClientAuthentication sends the client certificate
	// (bookkeeperTLSClientAuthentication), for bookies with
	// tlsClientAuthentication=true.
	ClientAuthentication bool `yaml:"client_authentication"`
	// KeyFileType is bookkeeperTLSKeyFileType: only PEM (the default).
	KeyFileType string `yaml:"key_file_type"`
	// TrustCertTypes is bookkeeperTLSTrustCertTypes: only PEM (the default).
	TrustCertTypes string `yaml:"trust_cert_types"`
	// CertificateFile and KeyFile are the client certificate and key
	// (bookkeeperTLSCertificateFilePath, bookkeeperTLSKeyFilePath).
	CertificateFile string `yaml:"certificate_file"`
	KeyFile         string `yaml:"key_file"`
	// TrustCertsFile is the CA bundle that signed the bookies'
	// certificates (bookkeeperTLSTrustCertsFilePath). Default: the system
	// roots.
	TrustCertsFile string `yaml:"trust_certs_file"`
	// HostnameVerification checks the bookie certificate's names against
	// the bookie's address (the BookKeeper client's
	// hostnameVerificationEnabled). Default false, as there.
	HostnameVerification bool `yaml:"hostname_verification"`
}

// Files returns the PEM files of the section (the client certificate only
// with client_authentication).
func (t BookKeeperTLS) Files() tlsfiles.Files {
	f := tlsfiles.Files{CAFile: t.TrustCertsFile, SkipHostnameVerification: !t.HostnameVerification}
	if t.ClientAuthentication {
		f.CertFile, f.KeyFile = t.CertificateFile, t.KeyFile
	}
	return f
}

// Driver is the tiered-storage location recorded in the managed-ledger
// metadata for stock brokers (mledger.Driver). Empty fields are derived
// from the store (docs/brokers.md gives the broker-side recipe).
type Driver struct {
	// Name is the broker's managedLedgerOffloadDriver (aws-s3, S3,
	// aliyun-oss). Default aws-s3.
	Name            string `yaml:"name"`
	Provider        string `yaml:"provider"`
	Bucket          string `yaml:"bucket"`
	Region          string `yaml:"region"`
	ServiceEndpoint string `yaml:"service_endpoint"`
}

// Admin is the broker admin REST API, used to unload a topic after a
// commit so brokers read the new metadata at once.
type Admin struct {
	// URL is the admin service URL, e.g. http://pulsar-broker:8080. Empty:
	// no unload; the broker's next metadata write fences and reloads the
	// topic (docs/design.md invariant 6).
	URL string `yaml:"url"`
	// Token is a Pulsar JWT sent as "Authorization: Bearer". Use !file.
	Token blob.Secret `yaml:"token"`
	// CAFile, CertFile and KeyFile configure TLS (https URLs).
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
	// Timeout bounds one admin request. Default 30s.
	Timeout Duration `yaml:"timeout"`
}

// HTTP is the status/metrics server.
type HTTP struct {
	// Listen is the address of /status, /metrics, /healthz and /readyz.
	// Default ":8090".
	Listen string `yaml:"listen"`
}

// Discovery configures how managed ledgers are found.
type Discovery struct {
	// RescanInterval is the full rescan period (watches catch most changes
	// in between). Default 5m.
	RescanInterval Duration `yaml:"rescan_interval"`
	// Concurrency bounds ZooKeeper reads in flight, per session. Default 32
	// (discovery's own): 100 000 managed ledgers take about twice as long
	// to scan with 8.
	Concurrency int `yaml:"concurrency"`
	// Sessions is how many ZooKeeper sessions a rescan sends its stats
	// through, the service's own included (the others are opened for it,
	// 1-16). ZooKeeper serves one session's requests in order on one
	// thread, so the stats of a large tree through one session are bound
	// by one server core. Default 2.
	Sessions int `yaml:"sessions"`
}

// Scheduler bounds the work in flight and its retries.
type Scheduler struct {
	// LedgersInFlight is the most ledgers offloaded at once. Default 2.
	LedgersInFlight int `yaml:"ledgers_in_flight"`
	// PartsInFlight is the most multipart parts uploaded at once over all
	// ledgers (memory ≈ parts × block size). Default 8.
	PartsInFlight int `yaml:"parts_in_flight"`
	// RetryInitial and RetryMax bound the jittered backoff between tries
	// of one ledger. Defaults 10s and 10m.
	RetryInitial Duration `yaml:"retry_initial"`
	RetryMax     Duration `yaml:"retry_max"`
	// ParkAfter parks a ledger after this many failed tries in a row; it
	// stays parked (visible in /status with its last error) for ParkFor.
	// Defaults 5 and 1h.
	ParkAfter int      `yaml:"park_after"`
	ParkFor   Duration `yaml:"park_for"`
	// Interval is how often the policy is evaluated. Default 30s.
	Interval Duration `yaml:"interval"`
	// StopTimeout bounds the wait, on SIGTERM, for ledgers in flight to
	// reach a safe point. Default 60s.
	StopTimeout Duration `yaml:"stop_timeout"`
	// MinReloadInterval is the shortest time between two commits (each
	// followed by a reload of the topic) on one topic: the topic's
	// candidates wait until then and go together in one job. Default 10m
	// (Pulsar's managedLedgerMinLedgerRolloverTimeMinutes); "0s": no bound.
	MinReloadInterval *Duration `yaml:"min_reload_interval"`
}

// DefaultMinReloadInterval is scheduler.min_reload_interval's default:
// Pulsar's default managedLedgerMinLedgerRolloverTimeMinutes, so a busy
// topic's reloads at most double the ledgers its broker rolls by itself
// (each unload closes the current ledger), and the ledgers that close in
// one interval (one at that rollover time) fit in one job.
const DefaultMinReloadInterval = 10 * time.Minute

// Leases are the per-topic ZooKeeper leases that let several replicas share
// the work.
type Leases struct {
	// Root is the znode under which the leases live. Default
	// /tierkeeper/leases.
	Root string `yaml:"root"`
	// ID names this replica in its leases. Default: the host name.
	ID string `yaml:"id"`
}

// Pressure configures the bookie disk-pressure trigger.
type Pressure struct {
	// Threshold is the ledger-disk usage ratio (0..1) from which a bookie
	// is under pressure. 0 (default): off.
	Threshold float64 `yaml:"threshold"`
	// MinAge is the youngest ledger offloaded for pressure. Default 1m.
	MinAge Duration `yaml:"min_age"`
	// Interval is how often usage is read. Default 30s.
	Interval Duration `yaml:"interval"`
	// Timeout bounds one read (agent report or Prometheus query). Default 5s.
	Timeout Duration `yaml:"timeout"`
	// Agents reads the bookie agents' /report: a URL template in which
	// {host} is the bookie id's host ("http://{host}:9580/report", the bookie agent's port), and
	// explicit URLs per bookie id that override it.
	AgentURL   string            `yaml:"agent_url"`
	AgentURLs  map[string]string `yaml:"agent_urls"`
	Prometheus PrometheusSource  `yaml:"prometheus"`
}

// pressureFields is Pressure without its methods (no recursion).
type pressureFields Pressure

// redacted returns p with the password of every URL redacted
// (blob.RedactURL): agent URLs and the Prometheus URL may carry basic auth.
func (p Pressure) redacted() pressureFields {
	out := pressureFields(p)
	out.AgentURL = blob.RedactURL(p.AgentURL)
	if p.AgentURLs != nil {
		out.AgentURLs = make(map[string]string, len(p.AgentURLs))
		for k, v := range p.AgentURLs {
			out.AgentURLs[k] = blob.RedactURL(v)
		}
	}
	out.Prometheus.URL = blob.RedactURL(p.Prometheus.URL)
	return out
}

// MarshalYAML renders the section with URL passwords redacted (Render,
// the config's JSON).
func (p Pressure) MarshalYAML() (any, error) { return p.redacted(), nil }

// Format prints the section with URL passwords redacted, for every verb.
func (p Pressure) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, fmt.FormatString(f, verb), p.redacted())
}

// PrometheusSource reads bookie usage from a Prometheus query instead of
// the agents.
type PrometheusSource struct {
	// URL of the Prometheus server (http://prometheus:9090).
	URL string `yaml:"url"`
	// Query returns one sample per bookie: its ledger-disk usage ratio.
	Query string `yaml:"query"`
	// BookieLabel is the label holding the bookie id. Default "bookie".
	BookieLabel string `yaml:"bookie_label"`
}

// Policy is the offload policy: rules, default, filters, Pulsar policies.
type Policy struct {
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
	Rules   []Rule   `yaml:"rules"`
	Default Rule     `yaml:"default"`
	// PulsarNamespacePolicies takes deletion lags from Pulsar's namespace
	// policies (pulsar-admin namespaces set-offload-deletion-lag /
	// set-offload-policies). A namespace whose policies set an offload
	// threshold is the broker's own offloader's, enabled or not: its topics
	// are refused (policy.BrokerOffload).
	PulsarNamespacePolicies PulsarPolicies `yaml:"pulsar_namespace_policies"`
}

// PulsarPolicies configures reading /admin/policies/<tenant>/<namespace>.
type PulsarPolicies struct {
	Enabled bool `yaml:"enabled"`
	// ThresholdBytes, ThresholdSeconds and DeletionLag are the broker.conf
	// values (managedLedgerOffloadAutoTriggerSizeThresholdBytes,
	// managedLedgerOffloadThresholdInSeconds,
	// managedLedgerOffloadDeletionLagMs) that apply where a namespace
	// leaves them unset. Defaults -1, -1 and 4h as in the broker. With
	// admin.url the broker's own thresholds are read from its admin API
	// instead; without, these two are what says whether the broker
	// offloads every topic itself.
	BrokerThresholdBytes   *int64    `yaml:"broker_threshold_bytes"`
	BrokerThresholdSeconds *int64    `yaml:"broker_threshold_seconds"`
	BrokerDeletionLag      *Duration `yaml:"broker_deletion_lag"`
}

// Rule is one policy rule; unset fields take the default rule's values.
type Rule struct {
	Name  string   `yaml:"name"`
	Match []string `yaml:"match"`
	// Offload false excludes the matched topics.
	Offload     *bool        `yaml:"offload"`
	After       *Duration    `yaml:"after"`
	KeepBytes   *Size        `yaml:"keep_bytes"`
	KeepLedgers *int         `yaml:"keep_ledgers"`
	Pressure    *bool        `yaml:"pressure"`
	DeletionLag *DeletionLag `yaml:"deletion_lag"`
	BlockSize   *Size        `yaml:"block_size"`
	Verify      *string      `yaml:"verify"`
}

// Sweeper configures orphan removal.
type Sweeper struct {
	Enabled bool `yaml:"enabled"`
	// Interval between sweeps. Default 1h.
	Interval Duration `yaml:"interval"`
	// Grace is how old an unreferenced object or incomplete upload must be
	// before it is deleted. Default 24h.
	Grace Duration `yaml:"grace"`
	// DryRun counts what would be deleted without deleting.
	DryRun bool `yaml:"dry_run"`
}

// Scrubber configures the scrubber: every committed ledger's objects are
// checked (package scrub); a ledger whose objects are missing or wrong
// while BookKeeper still has it is repaired (context cleared, topic
// reloaded, offloaded again by the policy); one whose BookKeeper copy is
// gone too is reported (/status, tierkeeper_scrub_lost_ledgers).
type Scrubber struct {
	// Enabled runs the scrubber in the service. Default true: without it
	// a lost object is only noticed when a reader fails, after the
	// deletion lag may have removed the BookKeeper copy.
	Enabled *bool `yaml:"enabled"`
	// Interval is the time from the start of one pass over every
	// committed ledger to the start of the next. Default 24h.
	Interval Duration `yaml:"interval"`
	// LedgersPerSecond bounds the ledgers checked per second (two store
	// requests each, through the store's limits). Default 10.
	LedgersPerSecond float64 `yaml:"ledgers_per_second"`
	// Deep also compares every entry with BookKeeper while it has the
	// ledger (reads whole ledgers from the bookies and the store).
	Deep bool `yaml:"deep"`
	// LedgerTimeout bounds one ledger's check (a deep check reads the
	// whole ledger twice: allow its bytes at the slower of the bookies'
	// and the store's read rates) and each repair write. Default 2m.
	LedgerTimeout Duration `yaml:"ledger_timeout"`
	// DryRun checks and reports, and repairs or trims nothing.
	DryRun bool `yaml:"dry_run"`
}

// On says whether the scrubber runs (default true).
func (s Scrubber) On() bool { return s.Enabled == nil || *s.Enabled }

// Metrics configures Prometheus labels.
type Metrics struct {
	// PerTopic adds topic labels to the lag gauges (high cardinality:
	// opt in only with few topics). Default false.
	PerTopic bool `yaml:"per_topic"`
}

// ParseOptions are the inputs Parse reads besides the document.
type ParseOptions struct {
	// Getenv resolves !env. Default os.Getenv.
	Getenv func(string) string
	// ReadFile resolves !file. Default os.ReadFile.
	ReadFile func(string) ([]byte, error)
}

// Load reads and parses a config file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c, err := Parse(b, ParseOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse reads a YAML config strictly, applies defaults and validates it.
// All problems are reported at once, each with its line.
func Parse(data []byte, o ParseOptions) (*Config, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ReadFile == nil {
		o.ReadFile = defaultReadFile
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var extra yaml.Node
	if dec.Decode(&extra) == nil {
		return nil, fmt.Errorf("%w: line %d: a second YAML document; one config per file", ErrConfig, extra.Line)
	}
	r := &resolver{getenv: o.Getenv, readFile: o.ReadFile}
	r.walk(&doc)
	errs := r.errs
	errs = append(errs, checkKeys(&doc, reflect.TypeFor[Config](), "", "yaml")...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	c := &Config{}
	if err := doc.Decode(c); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, r.scrub(err))
	}
	c.applyDefaults()
	if err := c.Validate(); err != nil {
		return nil, r.scrub(err)
	}
	return c, nil
}

func (c *Config) applyDefaults() {
	def := func(d *Duration, v time.Duration) {
		if *d == 0 {
			*d = Duration(v)
		}
	}
	defInt := func(i *int, v int) {
		if *i == 0 {
			*i = v
		}
	}
	def(&c.ZooKeeper.SessionTimeout, 30*time.Second)
	def(&c.ZooKeeper.ConnectTimeout, 30*time.Second)
	if c.ZooKeeper.MaxBufferSize == 0 {
		c.ZooKeeper.MaxBufferSize = tzk.DefaultMaxBufferSize
	}
	if c.ZooKeeper.ConfigChroot == "" {
		c.ZooKeeper.ConfigChroot = c.ZooKeeper.MLChroot
	}
	def(&c.Admin.Timeout, 30*time.Second)
	if c.HTTP.Listen == "" {
		c.HTTP.Listen = ":8090"
	}
	def(&c.Discovery.RescanInterval, 5*time.Minute)
	defInt(&c.Discovery.Concurrency, 32)
	defInt(&c.Discovery.Sessions, 2)
	defInt(&c.Scheduler.LedgersInFlight, 2)
	defInt(&c.Scheduler.PartsInFlight, 8)
	def(&c.Scheduler.RetryInitial, 10*time.Second)
	def(&c.Scheduler.RetryMax, 10*time.Minute)
	defInt(&c.Scheduler.ParkAfter, 5)
	def(&c.Scheduler.ParkFor, time.Hour)
	def(&c.Scheduler.Interval, 30*time.Second)
	def(&c.Scheduler.StopTimeout, 60*time.Second)
	if c.Scheduler.MinReloadInterval == nil {
		d := Duration(DefaultMinReloadInterval)
		c.Scheduler.MinReloadInterval = &d
	}
	if c.Leases.Root == "" {
		c.Leases.Root = DefaultLeaseRoot
	}
	if c.Leases.ID == "" {
		c.Leases.ID, _ = os.Hostname()
	}
	def(&c.Pressure.MinAge, time.Minute)
	def(&c.Pressure.Interval, 30*time.Second)
	def(&c.Pressure.Timeout, 5*time.Second)
	if c.Pressure.Prometheus.BookieLabel == "" {
		c.Pressure.Prometheus.BookieLabel = "bookie"
	}
	def(&c.Sweeper.Interval, time.Hour)
	def(&c.Sweeper.Grace, 24*time.Hour)
	def(&c.Scrub.Interval, 24*time.Hour)
	def(&c.Scrub.LedgerTimeout, 2*time.Minute)
	if c.Scrub.LedgersPerSecond == 0 {
		c.Scrub.LedgersPerSecond = 10
	}
	if c.Driver.Name == "" {
		c.Driver.Name = "aws-s3"
	}
}

// Validate checks the whole config; every problem names its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if strings.TrimSpace(c.ZooKeeper.Servers) == "" {
		bad("zookeeper.servers is required")
	} else if _, _, err := tzk.ParseServiceURI(c.ZooKeeper.Servers); err != nil {
		bad("zookeeper.servers: %v", err)
	}
	if c.ZooKeeper.SessionTimeout.D() < time.Second || c.ZooKeeper.SessionTimeout.D() > 10*time.Minute {
		bad("zookeeper.session_timeout %s: want 1s to 10m", c.ZooKeeper.SessionTimeout)
	}
	if c.ZooKeeper.ConnectTimeout.D() <= 0 {
		bad("zookeeper.connect_timeout must be positive")
	}
	if d := c.ZooKeeper.Digest.Reveal(); d != "" {
		if u, pw, ok := strings.Cut(d, ":"); !ok || u == "" || pw == "" {
			bad("zookeeper.digest: want user:password")
		}
	}
	if zt := c.ZooKeeper.TLS; zt.Enabled {
		if (zt.CertFile == "") != (zt.KeyFile == "") {
			bad("zookeeper.tls.cert_file and zookeeper.tls.key_file go together")
		}
	} else if zt.CAFile != "" || zt.CertFile != "" || zt.KeyFile != "" {
		bad("zookeeper.tls: files are set but enabled is false")
	}
	if bt := c.BookKeeper.TLS; bt.Enabled {
		for k, v := range map[string]string{"key_file_type": bt.KeyFileType, "trust_cert_types": bt.TrustCertTypes} {
			if v != "" && !strings.EqualFold(v, "PEM") {
				bad("bookkeeper.tls.%s %q: only PEM is supported (convert JKS/PKCS12 with keytool/openssl)", k, v)
			}
		}
		if bt.ClientAuthentication && (bt.CertificateFile == "" || bt.KeyFile == "") {
			bad("bookkeeper.tls.client_authentication needs certificate_file and key_file")
		}
		if !bt.ClientAuthentication && (bt.CertificateFile != "" || bt.KeyFile != "") {
			bad("bookkeeper.tls: certificate_file/key_file are set but client_authentication is false (they would not be sent)")
		}
	} else if bt.TrustCertsFile != "" || bt.CertificateFile != "" || bt.KeyFile != "" {
		bad("bookkeeper.tls: files are set but enabled is false")
	}
	if w := c.BookKeeper.WireProtocol; w != "" && w != bkclient.WireV2 && w != bkclient.WireV3 {
		bad("bookkeeper.wire_protocol %q: want %s or %s", w, bkclient.WireV2, bkclient.WireV3)
	}
	if m := c.ZooKeeper.MaxBufferSize; m < 1<<20 || m > 1<<30 {
		bad("zookeeper.max_buffer_size %s: want 1MiB to 1GiB", m)
	}
	for k, v := range map[string]string{"zookeeper.ml_chroot": c.ZooKeeper.MLChroot, "zookeeper.config_chroot": c.ZooKeeper.ConfigChroot,
		"bookkeeper.ledgers_root": c.BookKeeper.LedgersRoot} {
		if v != "" && !strings.HasPrefix(v, "/") {
			bad("%s %q must be an absolute znode path", k, v)
		}
	}
	if !strings.HasPrefix(c.Leases.Root, "/") || strings.HasSuffix(c.Leases.Root, "/") {
		bad("leases.root %q must be an absolute znode path without a trailing /", c.Leases.Root)
	}
	if c.Leases.ID == "" || strings.Contains(c.Leases.ID, "/") {
		bad("leases.id %q: want a name without /", c.Leases.ID)
	}
	if !c.Store.IsSet() {
		bad("store is required (a blob config: type fs, s3 or cos; see docs/blobstores.md)")
	}
	if b := c.Driver.Bucket; b != "" && c.Store.IsSet() {
		// Brokers read the objects from the bucket recorded in the
		// metadata; the offloader writes them to the store's.
		if d, err := pipeline.DriverForStore(c.Store.Client(), c.Driver.Name); err == nil && d.Bucket != b {
			bad("driver.bucket %q differs from the store's bucket %q (store.config.bucket): brokers would read the offloaded ledgers from a bucket the offloader does not write; leave driver.bucket unset (it is taken from the store)", b, d.Bucket)
		}
	}
	if e := c.Driver.ServiceEndpoint; e != "" {
		// Written into every offloaded ledger's metadata and shown by
		// status: a URL without credentials, checked as store endpoints are.
		if _, err := blob.ParseEndpoint(e); err != nil {
			bad("driver.service_endpoint: %v", err)
		}
	}
	if c.Admin.URL != "" {
		u, err := url.Parse(c.Admin.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("admin.url %q: want an http:// or https:// URL", blob.RedactURL(c.Admin.URL))
		} else if u.User != nil {
			bad("admin.url must not contain credentials; use admin.token")
		}
	}
	if (c.Admin.CertFile == "") != (c.Admin.KeyFile == "") {
		bad("admin.cert_file and admin.key_file go together")
	}
	if c.Admin.Timeout.D() <= 0 {
		bad("admin.timeout must be positive")
	}
	pos := func(key string, v int) {
		if v < 1 {
			bad("%s %d: want at least 1", key, v)
		}
	}
	pos("discovery.concurrency", c.Discovery.Concurrency)
	if v := c.Discovery.Sessions; v < 1 || v > 16 {
		bad("discovery.sessions %d: want 1 to 16", v)
	}
	pos("scheduler.ledgers_in_flight", c.Scheduler.LedgersInFlight)
	pos("scheduler.parts_in_flight", c.Scheduler.PartsInFlight)
	pos("scheduler.park_after", c.Scheduler.ParkAfter)
	for k, d := range map[string]Duration{"discovery.rescan_interval": c.Discovery.RescanInterval,
		"scheduler.retry_initial": c.Scheduler.RetryInitial, "scheduler.retry_max": c.Scheduler.RetryMax,
		"scheduler.park_for": c.Scheduler.ParkFor, "scheduler.interval": c.Scheduler.Interval,
		"scheduler.stop_timeout": c.Scheduler.StopTimeout, "pressure.interval": c.Pressure.Interval,
		"pressure.timeout": c.Pressure.Timeout, "sweeper.interval": c.Sweeper.Interval, "scrub.interval": c.Scrub.Interval,
		"scrub.ledger_timeout": c.Scrub.LedgerTimeout} {
		if d <= 0 {
			bad("%s must be positive", k)
		}
	}
	if c.Scheduler.MinReloadInterval != nil && *c.Scheduler.MinReloadInterval < 0 {
		bad("scheduler.min_reload_interval must not be negative")
	}
	if c.Scheduler.RetryMax < c.Scheduler.RetryInitial {
		bad("scheduler.retry_max %s is below scheduler.retry_initial %s", c.Scheduler.RetryMax, c.Scheduler.RetryInitial)
	}
	if c.Scrub.LedgersPerSecond < 0 {
		bad("scrub.ledgers_per_second %v: want a positive rate", c.Scrub.LedgersPerSecond)
	}
	if c.Sweeper.Grace.D() < time.Minute {
		bad("sweeper.grace %s: want at least 1m (an upload in progress must never look orphaned)", c.Sweeper.Grace)
	}
	p := c.Pressure
	if p.Threshold < 0 || p.Threshold > 1 {
		bad("pressure.threshold %v: want a usage ratio 0..1 (e.g. 0.85)", p.Threshold)
	}
	if p.Threshold > 0 && p.AgentURL == "" && len(p.AgentURLs) == 0 && p.Prometheus.URL == "" {
		bad("pressure.threshold is set but no source: set pressure.agent_url, pressure.agent_urls or pressure.prometheus.url")
	}
	if p.Prometheus.URL != "" && (p.AgentURL != "" || len(p.AgentURLs) > 0) {
		bad("pressure: give agent URLs or prometheus, not both")
	}
	if p.Prometheus.URL != "" && p.Prometheus.Query == "" {
		bad("pressure.prometheus.query is required with pressure.prometheus.url")
	}
	if p.AgentURL != "" && !strings.Contains(p.AgentURL, "{host}") {
		bad("pressure.agent_url %q must contain {host}", blob.RedactURL(p.AgentURL))
	}
	if _, err := c.PolicyRules(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// PolicyRules resolves the policy section: each rule's unset fields from
// the default rule, the default's from the built-in defaults (offload,
// after 24h, no size or count limit, pressure on, deletion lag broker,
// verify full: the pipeline's default, every entry compared for ledgers up
// to pipeline.DefaultFullVerifyBytes, three sampled windows above).
func (c *Config) PolicyRules() (policy.Rules, error) {
	base := policy.Rule{Name: "default", Offload: true, After: 24 * time.Hour, KeepBytes: -1, KeepLedgers: -1,
		Pressure: true, DeletionLag: policy.DeletionLag{Mode: policy.LagBroker}, Verify: policy.VerifyFull}
	def := resolveRule(c.Policy.Default, base)
	def.Match = nil
	if c.Policy.Default.Name == "" {
		def.Name = "default"
	}
	out := policy.Rules{
		Default: def, Include: c.Policy.Include, Exclude: c.Policy.Exclude,
		Pressure:       policy.Pressure{Threshold: c.Pressure.Threshold, MinAge: c.Pressure.MinAge.D()},
		PulsarPolicies: c.Policy.PulsarNamespacePolicies.Enabled,
		BrokerDefaults: policy.BrokerDefaults{ThresholdBytes: -1, ThresholdSeconds: -1},
	}
	if c.Scheduler.MinReloadInterval != nil {
		out.MinReloadInterval = c.Scheduler.MinReloadInterval.D()
	}
	pp := c.Policy.PulsarNamespacePolicies
	if pp.BrokerThresholdBytes != nil {
		out.BrokerDefaults.ThresholdBytes = *pp.BrokerThresholdBytes
	}
	if pp.BrokerThresholdSeconds != nil {
		out.BrokerDefaults.ThresholdSeconds = *pp.BrokerThresholdSeconds
	}
	if pp.BrokerDeletionLag != nil {
		d := pp.BrokerDeletionLag.D()
		out.BrokerDefaults.DeletionLag = &d
	}
	var errs []error
	if len(c.Policy.Default.Match) > 0 {
		errs = append(errs, errors.New("policy.default.match: the default rule matches every topic; remove match"))
	}
	for i, r := range c.Policy.Rules {
		pr := resolveRule(r, def)
		pr.Name, pr.Match = r.Name, r.Match
		if pr.Name == "" {
			pr.Name = fmt.Sprintf("rule-%d", i+1)
		}
		out.Rules = append(out.Rules, pr)
	}
	if err := out.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("policy: %w", err))
	}
	return out, errors.Join(errs...)
}

func resolveRule(r Rule, base policy.Rule) policy.Rule {
	out := base
	if r.Name != "" {
		out.Name = r.Name
	}
	if r.Offload != nil {
		out.Offload = *r.Offload
	}
	if r.After != nil {
		out.After = r.After.D()
	}
	if r.KeepBytes != nil {
		out.KeepBytes = int64(*r.KeepBytes)
	}
	if r.KeepLedgers != nil {
		out.KeepLedgers = *r.KeepLedgers
	}
	if r.Pressure != nil {
		out.Pressure = *r.Pressure
	}
	if r.DeletionLag != nil {
		out.DeletionLag = r.DeletionLag.DeletionLag
	}
	if r.BlockSize != nil {
		out.BlockSize = int64(*r.BlockSize)
	}
	if r.Verify != nil {
		out.Verify = *r.Verify
	}
	return out
}

// Render returns the effective config as YAML, secrets redacted.
func (c *Config) Render() string {
	b, err := yaml.Marshal(c)
	if err != nil {
		return fmt.Sprintf("# cannot render config: %v\n", err)
	}
	return string(b)
}

// MarshalJSON renders the effective config with the YAML key names and
// value formats (durations, sizes), secrets redacted.
func (c *Config) MarshalJSON() ([]byte, error) {
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, err
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// connectZK opens the ZooKeeper session the config names.
func (c *Config) connectZK(ctx context.Context, log *slog.Logger) (*tzk.Session, error) {
	pc, err := c.Peers()
	if err != nil {
		return nil, err
	}
	pc.ZKOptions.Logger = log
	return pc.connect(ctx)
}

// zkOptions are the session options of the zookeeper section: timeouts,
// digest credentials, TLS.
func (c *Config) zkOptions(log *slog.Logger) (tzk.Options, error) {
	o := tzk.Options{SessionTimeout: c.ZooKeeper.SessionTimeout.D(), ConnectTimeout: c.ZooKeeper.ConnectTimeout.D(),
		MaxBufferSize: int(c.ZooKeeper.MaxBufferSize), Logger: log, Digest: c.ZooKeeper.Digest.Reveal()}
	if c.ZooKeeper.TLS.Enabled {
		tc, err := c.ZooKeeper.TLS.Files().Config()
		if err != nil {
			return o, fmt.Errorf("zookeeper.tls: %w", err)
		}
		o.TLS = tc
	}
	return o, nil
}

// bookieTLS is the bookkeeper section's TLS config, nil without TLS.
func (c *Config) bookieTLS() (*tls.Config, error) {
	if !c.BookKeeper.TLS.Enabled {
		return nil, nil
	}
	tc, err := c.BookKeeper.TLS.Files().Config()
	if err != nil {
		return nil, fmt.Errorf("bookkeeper.tls: %w", err)
	}
	return tc, nil
}

// openStore opens the configured blob store (metrics on reg when set);
// its error names the store section.
func (c *Config) openStore(ctx context.Context, log *slog.Logger, reg prometheus.Registerer) (blob.Store, error) {
	sc := c.Store.Client()
	pc := PeersConfig{Store: &sc}
	return pc.openStore(ctx, PeersOptions{Logger: log, Registerer: reg})
}
