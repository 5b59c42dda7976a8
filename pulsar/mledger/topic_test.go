package mledger

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestTopicManagedLedgers(t *testing.T) {
	f := newFakeZK()
	info := mustMarshal(sampleInfo(1, 3))
	for _, ml := range []string{
		"public/default/persistent/orders",
		"public/default/persistent/clicks-partition-0",
		"public/default/persistent/clicks-partition-2",
		"public/default/persistent/clicks-partition-10",
		"public/default/persistent/clicks-other-partition-1",
		"t/ns/persistent/a%2Bb",
		"prop/us-west/ns/persistent/legacy",
	} {
		f.put(Path(ml), info)
	}
	f.put(Path("public/default/persistent/orders")+"/sub-1", nil) // a cursor
	s := New(f, nil)
	ctx := context.Background()
	for _, c := range []struct {
		topic string
		want  []string
	}{
		{"orders", []string{"public/default/persistent/orders"}},
		{"persistent://public/default/orders", []string{"public/default/persistent/orders"}},
		{"public/default/clicks", []string{"public/default/persistent/clicks-partition-0",
			"public/default/persistent/clicks-partition-2", "public/default/persistent/clicks-partition-10"}},
		{"clicks-partition-2", []string{"public/default/persistent/clicks-partition-2"}},
		{"persistent://t/ns/a+b", []string{"t/ns/persistent/a%2Bb"}},
		{"persistent://prop/us-west/ns/legacy", []string{"prop/us-west/ns/persistent/legacy"}},
	} {
		got, err := s.TopicManagedLedgers(ctx, c.topic)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v", c.topic, got, err, c.want)
		}
	}
	for _, c := range []struct {
		topic string
		want  error
	}{
		{"missing", ErrNotFound},
		{"clicks-partition-1", ErrNotFound},
		{"non-persistent://public/default/x", ErrInvalidName},
	} {
		if _, err := s.TopicManagedLedgers(ctx, c.topic); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.topic, err, c.want)
		}
		if _, err := s.TopicSnapshots(ctx, c.topic); !errors.Is(err, c.want) {
			t.Errorf("TopicSnapshots(%s): %v, want %v", c.topic, err, c.want)
		}
	}
	// TopicSnapshots reads each of those managed ledgers, in that order.
	snaps, err := s.TopicSnapshots(ctx, "public/default/clicks")
	if err != nil || len(snaps) != 3 {
		t.Fatalf("TopicSnapshots(clicks): %d, %v", len(snaps), err)
	}
	for i, want := range []string{"public/default/persistent/clicks-partition-0",
		"public/default/persistent/clicks-partition-2", "public/default/persistent/clicks-partition-10"} {
		if snaps[i].Name != want || len(snaps[i].Info.GetLedgerInfo()) != len(sampleInfo(1, 3).GetLedgerInfo()) {
			t.Errorf("snapshot %d: %s with %d ledgers, want %s", i, snaps[i].Name, len(snaps[i].Info.GetLedgerInfo()), want)
		}
	}
}

// TestTopicLedgers: every ledger of every partition, in partition then
// stored order, with its state and offload attempt.
func TestTopicLedgers(t *testing.T) {
	f := newFakeZK()
	f.put(Path("public/default/persistent/clicks-partition-0"), mustMarshal(sampleInfo(1, 3)))
	f.put(Path("public/default/persistent/clicks-partition-1"), mustMarshal(sampleInfo(7, 2)))
	s := New(f, nil)
	snaps, ls, err := s.TopicLedgers(context.Background(), "clicks")
	if err != nil || len(snaps) != 2 {
		t.Fatalf("%d snapshots, %v", len(snaps), err)
	}
	type row struct {
		ml       string
		id, size int64
		state    LedgerState
		attempt  bool
		complete bool
	}
	var got []row
	for _, l := range ls {
		got = append(got, row{l.ML[len("public/default/persistent/"):], l.ID, l.Size, l.State, l.HasAttempt, l.Complete})
	}
	want := []row{
		{"clicks-partition-0", 1, 1000, StateOffloaded, true, true},
		{"clicks-partition-0", 2, 2000, StateBookKeeper, false, false},
		{"clicks-partition-0", 3, 0, StateOpen, false, false},
		{"clicks-partition-1", 7, 1000, StateBookKeeper, false, false},
		{"clicks-partition-1", 8, 0, StateOpen, false, false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ledgers\n%v\nwant\n%v", got, want)
	}
	if _, _, err := s.TopicLedgers(context.Background(), "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing topic: %v", err)
	}
}
