package mledger

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
)

// ClearOffloadEdit clears only a complete context of the attempt it names.
func TestClearOffloadEdit(t *testing.T) {
	id, other := uuid.New(), uuid.New()
	ctx := func(u uuid.UUID, complete, bkDeleted bool) *mlproto.OffloadContext {
		msb, lsb := UUIDToBits(u)
		md, _ := Driver{Name: "aws-s3", Bucket: "b"}.Metadata()
		return &mlproto.OffloadContext{UidMsb: proto.Int64(msb), UidLsb: proto.Int64(lsb), Complete: proto.Bool(complete),
			BookkeeperDeleted: proto.Bool(bkDeleted), Timestamp: proto.Int64(1), DriverMetadata: md}
	}
	fn := ClearOffloadEdit(7, id).Fn
	for _, c := range []struct {
		name string
		oc   *mlproto.OffloadContext
		want error
	}{
		{"another attempt", ctx(other, true, false), ErrOffloadConflict},
		{"no attempt", &mlproto.OffloadContext{}, ErrOffloadConflict},
		{"not complete", ctx(id, false, false), ErrNotOffloaded},
	} {
		before := proto.Clone(c.oc)
		if ch, err := fn(c.oc, nil); ch || !errors.Is(err, c.want) || !proto.Equal(c.oc, before) {
			t.Errorf("%s: changed %v, err %v, context %v", c.name, ch, err, c.oc)
		}
	}
	for _, bk := range []bool{false, true} {
		oc := ctx(id, true, bk)
		if ch, err := fn(oc, nil); !ch || err != nil || proto.Size(oc) != 0 {
			t.Errorf("complete (bookkeeperDeleted %v): changed %v, err %v, left %v", bk, ch, err, oc)
		}
	}
}
