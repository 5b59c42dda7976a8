package allocs

import "testing"

var sink []byte

func TestBytes(t *testing.T) {
	if got := Bytes(3, func() {}); got > 1024 {
		t.Errorf("empty function: %d bytes", got)
	}
	got := Bytes(3, func() { sink = make([]byte, 1<<20) })
	if got < 1<<20 || got > 1<<20+64<<10 {
		t.Errorf("1 MiB allocation measured as %d bytes", got)
	}
}
