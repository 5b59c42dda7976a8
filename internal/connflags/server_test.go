package connflags

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The flags parse into the fields; bad timeouts and a bad --zk are clear
// errors before any connection.
func TestZKServerFlags(t *testing.T) {
	var s ZKServer
	f := pflag.NewFlagSet("t", pflag.ContinueOnError)
	s.AddFlags(f, "127.0.0.1:2181", "zk")
	if err := f.Parse([]string{"--zk", "zk1:2181/ledgers", "--zk-connect-timeout", "3s", "--zk-tls-ca", "ca.pem"}); err != nil {
		t.Fatal(err)
	}
	if s.ZK != "zk1:2181/ledgers" || s.ZKConnectTimeout != 3*time.Second || s.ZKSessionTimeout != 30*time.Second || s.ZKSecure.CAFile != "ca.pem" {
		t.Errorf("parsed %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("valid flags: %v", err)
	}
	s.ZKSessionTimeout = 0
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--zk-session-timeout 0s") {
		t.Errorf("zero session timeout: %v", err)
	}
	s = ZKServer{ZK: "etcd://h:1", ZKSessionTimeout: time.Second, ZKConnectTimeout: time.Second}
	if _, _, err := s.Connect(context.Background(), nil); err == nil || !strings.HasPrefix(err.Error(), "--zk: ") {
		t.Errorf("bad --zk: %v", err)
	}
}
