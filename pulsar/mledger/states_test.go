package mledger

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
)

// FuzzStatesAndDriver decodes arbitrary protobuf as a ManagedLedgerInfo
// (as a broker, or a bug, might have written it) and checks that States
// and DriverFromMetadata never panic and keep their contract: one state
// per ledger, only the last one open, the state follows the offload
// context; a driver read back and written again reads back the same.
func FuzzStatesAndDriver(f *testing.F) {
	seed := sampleInfo(1, 5)
	seed.LedgerInfo[2].OffloadContext = &mlproto.OffloadContext{UidMsb: proto.Int64(1), UidLsb: proto.Int64(2)}
	seed.LedgerInfo[3].OffloadContext = &mlproto.OffloadContext{Complete: proto.Bool(true), BookkeeperDeleted: proto.Bool(true),
		DriverMetadata: &mlproto.OffloadDriverMetadata{Name: proto.String("x"), Properties: []*mlproto.KeyValue{
			{Key: proto.String(PropBucket), Value: proto.String("b1")}, {Key: proto.String(PropBucket), Value: proto.String("b2")}}}}
	for _, info := range []*mlproto.ManagedLedgerInfo{seed, sampleInfo(7, 1), {}} {
		b, _ := proto.Marshal(info)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info := &mlproto.ManagedLedgerInfo{}
		if proto.Unmarshal(data, info) != nil {
			return
		}
		lis := info.GetLedgerInfo()
		states := States(info)
		if len(states) != len(lis) {
			t.Fatalf("%d states for %d ledgers", len(states), len(lis))
		}
		for i, st := range states {
			oc := lis[i].GetOffloadContext()
			_, hasUUID := AttemptUUID(oc)
			var want LedgerState
			switch {
			case i == len(lis)-1:
				want = StateOpen
			case oc.GetComplete() && oc.GetBookkeeperDeleted():
				want = StateOffloadedBKDeleted
			case oc.GetComplete():
				want = StateOffloaded
			case hasUUID:
				want = StateOffloading
			default:
				want = StateBookKeeper
			}
			if st != want || st.String() == "" {
				t.Fatalf("ledger %d: state %v, want %v (context %v)", i, st, want, oc)
			}
			md := oc.GetDriverMetadata()
			d := DriverFromMetadata(md)
			if d.Name != md.GetName() {
				t.Fatalf("driver name %q, stored %q", d.Name, md.GetName())
			}
			back, err := d.Metadata()
			if err != nil {
				continue // unknown driver without a provider: nothing to write back
			}
			again := DriverFromMetadata(back)
			if d.Provider == "" {
				d.Provider = again.Provider // Metadata filled in the known provider
			}
			if again != d {
				t.Fatalf("driver %+v written and read back as %+v", d, again)
			}
		}
	})
}
