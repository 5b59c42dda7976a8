package testenv

import (
	"testing"
	"time"
)

// StackOptions configure StartStack. The zero value gives 3 bookies, the
// shared S3 server with a fresh bucket and a broker offloading to it.
type StackOptions struct {
	// Bookies is the number of bookies [3].
	Bookies int
	// NoBroker starts no broker (and no S3 bucket for it).
	NoBroker bool
	// Broker are the broker's options; Offload defaults to S3Offload on
	// the stack's bucket.
	Broker BrokerOptions
}

// Stack is ZooKeeper, bookies, the S3 server (versitygw) and a stock broker
// offloading to Bucket: everything tierkeeper's main job touches.
type Stack struct {
	ZK     *ZooKeeper
	BK     *BookKeeperCluster
	S3     *S3
	Bucket string
	Broker *Broker // nil with NoBroker
	Java   *JavaTools
	// Took is the wall time of StartStack.
	Took time.Duration
}

// StartStack starts the whole stack on 127.0.0.1; it stops when t ends
// (the S3 server with StopSharedS3 or the process). Outside `go test` (make
// demo) pass a NewSharedTB and call its Close, then StopSharedS3, at the end:
//
//	scope := testenv.NewSharedTB("demo")
//	defer testenv.StopSharedS3()
//	defer scope.Close()
//	var st *testenv.Stack
//	if err := scope.Do(func(tb testing.TB) { st = testenv.StartStack(tb, testenv.StackOptions{}) }); err != nil { ... }
func StartStack(t testing.TB, o StackOptions) *Stack {
	t.Helper()
	began := time.Now()
	if o.Bookies == 0 {
		o.Bookies = 3
	}
	st := &Stack{Java: Java(t)}
	st.ZK = StartZooKeeper(t)
	st.S3 = StartS3(t)
	st.BK = StartBookies(t, st.ZK, o.Bookies)
	if !o.NoBroker {
		bo := o.Broker
		if bo.Offload == nil {
			st.Bucket = st.S3.NewBucket(t)
			bo.Offload = S3Offload(st.S3, st.Bucket)
		} else {
			st.Bucket = bo.Offload.Bucket
		}
		st.Broker = StartBroker(t, st.BK, bo)
	}
	st.Took = time.Since(began)
	return st
}

var _ testing.TB = (*SharedTB)(nil)
