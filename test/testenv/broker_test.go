package testenv

import (
	"strings"
	"testing"
	"time"
)

func TestTopicPath(t *testing.T) {
	for in, want := range map[string]string{
		"persistent://public/default/a":  "/admin/v2/persistent/public/default/a",
		"t/ns/x-partition-2":             "/admin/v2/persistent/t/ns/x-partition-2",
		"short":                          "/admin/v2/persistent/public/default/short",
		"non-persistent://t/ns/a b":      "/admin/v2/non-persistent/t/ns/a%20b",
		"persistent://t/ns/with%percent": "/admin/v2/persistent/t/ns/with%25percent",
	} {
		got, err := TopicPath(in)
		if err != nil || got != want {
			t.Errorf("TopicPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a/b", "t/ns/a/b", "persistent://t//x", "http://t/ns/x"} {
		if p, err := TopicPath(bad); err == nil {
			t.Errorf("TopicPath(%q) = %q, want an error", bad, p)
		}
	}
}

// broker.conf holds the settings the harness promises and never a
// credential (those go to the environment only).
func TestBrokerConf(t *testing.T) {
	s3 := &S3{Endpoint: "http://127.0.0.1:9", Region: "us-east-1", AccessKey: "TKACCESSKEY", SecretKey: "s3cr3t-value"}
	br := &Broker{ZK: &ZooKeeper{Addr: "127.0.0.1:2181"}, BK: &BookKeeperCluster{ZK: &ZooKeeper{Addr: "127.0.0.1:2181"}, LedgersRoot: "/ledgers"},
		build: &JavaBuild{Dir: "/x", NarDir: "/x/target/offloaders"}, WebPort: 1, ServicePort: 2}
	br.opts = withBrokerDefaults(BrokerOptions{Offload: S3Offload(s3, "bkt"), ReadBufferSize: 65536, DeletionLag: 2 * time.Second,
		Conf: []string{"managedLedgerMaxEntriesPerLedger=7", "extraKey=1"}})
	conf := br.confText()
	for _, want := range []string{
		"managedLedgerOffloadDriver=aws-s3\n", "managedLedgerOffloadBucket=bkt\n", "managedLedgerOffloadServiceEndpoint=http://127.0.0.1:9\n",
		"managedLedgerOffloadReadBufferSizeInBytes=65536\n", "managedLedgerOffloadDeletionLagMs=2000\n",
		"managedLedgerMaxEntriesPerLedger=7\n", "extraKey=1\n", "brokerDeleteInactiveTopicsEnabled=false\n",
		"defaultRetentionTimeInMinutes=-1\n", "bindAddress=127.0.0.1\n", "bookkeeperMetadataServiceUri=zk+hierarchical://127.0.0.1:2181/ledgers\n",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("broker.conf lacks %q:\n%s", want, conf)
		}
	}
	if strings.Count(conf, "managedLedgerMaxEntriesPerLedger=") != 1 {
		t.Errorf("an extra key did not replace the default:\n%s", conf)
	}
	if strings.Contains(conf, s3.SecretKey) || strings.Contains(conf, s3.AccessKey) {
		t.Errorf("broker.conf holds a credential:\n%s", conf)
	}
	if opts := strings.Join(br.jvmOptions(), " "); strings.Contains(opts, s3.SecretKey) || !strings.Contains(opts, "-Djclouds.regions=us-east-1") {
		t.Errorf("JVM options: %s", opts)
	}
	br.opts.DeletionLag = 0
	if c := br.confText(); !strings.Contains(c, "managedLedgerOffloadDeletionLagMs=315360000000\n") {
		t.Errorf("deletion lag 0 is not 'never':\n%s", c)
	}
}
