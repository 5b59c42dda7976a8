package main

import (
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/copytrace"
)

func TestParseTimelineProcs(t *testing.T) {
	got, err := parseProcs([]string{"bookie-0=12", "versitygw=345"})
	if err != nil || len(got) != 2 || got[0] != (copytrace.Proc{Name: "bookie-0", PID: 12}) || got[1] != (copytrace.Proc{Name: "versitygw", PID: 345}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range [][]string{{"bookie"}, {"=12"}, {"x=0"}, {"x=abc"}, {"offloader=5"}, {"a=1", "a=2"}} {
		if _, err := parseProcs(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
