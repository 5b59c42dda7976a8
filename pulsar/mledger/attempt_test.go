package mledger

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
)

// TestAttemptUUIDs: a fresh attempt's prepare UUID and its object UUID
// are distinct, both tierkeeper's, of one attempt, and ObjectUUID is
// the identity on everything else (object UUIDs, the broker's v4 UUIDs,
// older tierkeeper versions' 0x74b UUIDs).
func TestAttemptUUIDs(t *testing.T) {
	seen := map[uuid.UUID]bool{}
	for range 100 {
		p := NewAttemptUUID()
		o := ObjectUUID(p)
		if p == o || !OwnAttempt(p) || !OwnAttempt(o) || !SameAttempt(p, o) || !SameAttempt(o, p) || ObjectUUID(o) != o {
			t.Fatalf("prepare %s, objects %s: want distinct, own, one attempt, ObjectUUID idempotent", p, o)
		}
		if p.Version() != 8 || o.Version() != 8 || p.Variant() != uuid.RFC4122 || o.Variant() != uuid.RFC4122 {
			t.Fatalf("prepare %s, objects %s: want RFC 9562 version 8", p, o)
		}
		if p.String()[14:18] != "874d" || o.String()[14:18] != "874c" {
			t.Fatalf("prepare %s, objects %s: want tags 874d and 874c", p, o)
		}
		if seen[p] || seen[o] {
			t.Fatalf("%s repeated", p)
		}
		seen[p], seen[o] = true, true
	}
	legacy := uuid.MustParse("0f6c3a58-2d4e-874b-9a51-6b0e2f5d7c11")
	broker := uuid.MustParse("0f6c3a58-2d4e-474d-9a51-6b0e2f5d7c11") // v4: the broker's, even with our tag's low bits
	for _, u := range []uuid.UUID{legacy, broker, uuid.New()} {
		if ObjectUUID(u) != u {
			t.Errorf("ObjectUUID(%s) = %s, want itself", u, ObjectUUID(u))
		}
	}
	if !OwnAttempt(legacy) || OwnAttempt(broker) {
		t.Errorf("OwnAttempt: legacy %v (want true), broker %v (want false)", OwnAttempt(legacy), OwnAttempt(broker))
	}
	if SameAttempt(NewAttemptUUID(), NewAttemptUUID()) {
		t.Error("two fresh attempts are one")
	}
}

// TestTwoUUIDLifecycle: the prepare stores the prepare UUID (which a
// broker's cleanupOffloaded would delete objects of: there are none),
// AttemptUUID reads the object UUID from it, the commit stores the object
// UUID with complete=true, and every later edit accepts either UUID of
// the attempt; another attempt is still a conflict.
func TestTwoUUIDLifecycle(t *testing.T) {
	s, f := newTestStore(t, sampleInfo(10, 5), nil)
	ctx := context.Background()
	p := NewAttemptUUID()
	o := ObjectUUID(p)
	if _, _, err := s.PrepareOffload(ctx, testML, 12, p, s3drv); err != nil {
		t.Fatal(err)
	}
	info, _ := stored(t, f, testML)
	oc := info.LedgerInfo[2].OffloadContext
	if raw, _ := StoredUUID(oc); raw != p {
		t.Fatalf("prepare stored %s, want the prepare UUID %s", raw, p)
	}
	if got, _ := AttemptUUID(oc); got != o {
		t.Fatalf("AttemptUUID of the prepared context %s, want the object UUID %s", got, o)
	}
	if prev, res, err := s.PrepareOffload(ctx, testML, 12, p, s3drv); err != nil || res.Written || prev != uuid.Nil {
		t.Fatalf("prepare again: %s %+v %v", prev, res, err)
	}
	if _, err := s.CompleteOffload(ctx, testML, 12, ObjectUUID(NewAttemptUUID())); !errors.Is(err, ErrOffloadConflict) {
		t.Fatalf("complete of another attempt: %v", err)
	}
	if res, err := s.CompleteOffload(ctx, testML, 12, o); err != nil || !res.Written {
		t.Fatalf("complete by the object UUID: %+v %v", res, err)
	}
	info, _ = stored(t, f, testML)
	oc = info.LedgerInfo[2].OffloadContext
	if raw, _ := StoredUUID(oc); raw != o || !oc.GetComplete() {
		t.Fatalf("after the commit: stored %s complete %v, want the object UUID %s, complete", raw, oc.GetComplete(), o)
	}
	// Another writer that adopted the attempt commits it again by its
	// prepare UUID: nothing to write, no conflict (its objects are ours).
	if res, err := s.CompleteOffload(ctx, testML, 12, p); err != nil || res.Written {
		t.Fatalf("complete again by the prepare UUID: %+v %v", res, err)
	}
	if res, err := s.MarkBookkeeperDeleted(ctx, testML, 12, p); err != nil || !res.Written {
		t.Fatalf("mark by the prepare UUID: %+v %v", res, err)
	}
	// A prepare replacing an unfinished attempt reports it by the UUID
	// its objects carry, for the caller to remove them.
	p2 := NewAttemptUUID()
	if _, _, err := s.PrepareOffload(ctx, testML, 13, p2, s3drv); err != nil {
		t.Fatal(err)
	}
	prev, _, err := s.PrepareOffload(ctx, testML, 13, NewAttemptUUID(), s3drv)
	if err != nil || prev != ObjectUUID(p2) {
		t.Fatalf("replacing prepare: superseded %s, %v; want %s", prev, err, ObjectUUID(p2))
	}
}
