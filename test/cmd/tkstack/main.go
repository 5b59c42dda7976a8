// Command tkstack runs the test stack outside `go test`: ZooKeeper,
// bookies, versitygw and a stock Pulsar broker offloading to a fresh
// bucket, all on 127.0.0.1 (testenv.StartStack). It prints the addresses
// as JSON on stdout, writes them together with the S3 credentials to
// --state (mode 0600; credentials never go to stdout), and runs until
// SIGINT/SIGTERM, then stops everything.
//
//	go run ./test/cmd/tkstack --state /tmp/stack.json
//
// Needs `make deps` (Java build, versitygw).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// state is what --state gets.
type state struct {
	ZooKeeper          string   `json:"zookeeper"`
	MetadataServiceURI string   `json:"metadataServiceUri"`
	Bookies            []string `json:"bookies"`
	BrokerWebURL       string   `json:"brokerWebUrl,omitempty"`
	BrokerServiceURL   string   `json:"brokerServiceUrl,omitempty"`
	BrokerPid          int      `json:"brokerPid,omitempty"`
	BrokerLog          string   `json:"brokerLog,omitempty"`
	S3Endpoint         string   `json:"s3Endpoint"`
	S3Region           string   `json:"s3Region"`
	Bucket             string   `json:"bucket,omitempty"`
	S3AccessKey        string   `json:"s3AccessKey,omitempty"`
	S3SecretKey        string   `json:"s3SecretKey,omitempty"`
	StartSeconds       float64  `json:"startSeconds"`
}

func main() {
	bookies := flag.Int("bookies", 3, "number of bookies")
	noBroker := flag.Bool("no-broker", false, "start no broker")
	entries := flag.Int("entries-per-ledger", 100, "broker managedLedgerMaxEntriesPerLedger")
	statePath := flag.String("state", "", "write addresses and S3 credentials here (mode 0600)")
	flag.Parse()

	scope := testenv.NewSharedTB("tkstack")
	var st *testenv.Stack
	err := scope.Do(func(tb testing.TB) {
		st = testenv.StartStack(tb, testenv.StackOptions{Bookies: *bookies, NoBroker: *noBroker,
			Broker: testenv.BrokerOptions{MaxEntriesPerLedger: *entries}})
	})
	stop := func() { scope.Close(); testenv.StopSharedS3() }
	if err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "tkstack:", err)
		os.Exit(1)
	}
	s := state{ZooKeeper: st.ZK.Addr, MetadataServiceURI: st.BK.MetadataServiceURI(), S3Endpoint: st.S3.Endpoint,
		S3Region: st.S3.Region, Bucket: st.Bucket, StartSeconds: st.Took.Seconds()}
	for _, b := range st.BK.Bookies() {
		s.Bookies = append(s.Bookies, b.ID)
	}
	if st.Broker != nil {
		s.BrokerWebURL, s.BrokerServiceURL, s.BrokerPid, s.BrokerLog = st.Broker.WebURL, st.Broker.ServiceURL, st.Broker.Pid(), st.Broker.LogPath()
	}
	out, _ := json.MarshalIndent(s, "", "  ")
	fmt.Println(string(out))
	if *statePath != "" {
		s.S3AccessKey, s.S3SecretKey = st.S3.AccessKey, st.S3.SecretKey
		b, _ := json.MarshalIndent(s, "", "  ")
		if err := os.WriteFile(*statePath, b, 0o600); err != nil {
			stop()
			fmt.Fprintln(os.Stderr, "tkstack:", err)
			os.Exit(1)
		}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	began := time.Now()
	stop()
	fmt.Fprintf(os.Stderr, "tkstack: stopped in %s\n", time.Since(began).Round(time.Millisecond))
}
