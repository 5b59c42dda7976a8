package offloadbench

import (
	"strings"
	"testing"
)

// A perf script excerpt (-F pid,tid,time,ip,sym,dso) in the shape perf
// 6.1 prints (a PID under five digits right-aligned): process 200 has
// six samples, process 300 one.
const perfScriptExcerpt = `200/201 37573.001: 
	          4a1b2c crypto/internal/fips140/aes/gcm.gcmAesEnc.abi0 (/tmp/bin/offloader)
	          4a0000 crypto/internal/fips140/aes/gcm.seal (/tmp/bin/offloader)

200/202 37573.002: 
	ffffffff81ba4f70 _copy_to_iter ([kernel.kallsyms])
	ffffffff81e3b0a0 tcp_recvmsg_locked ([kernel.kallsyms])
	ffffffff81e3b2f0 tcp_recvmsg ([kernel.kallsyms])
	          90e88e internal/runtime/syscall/linux.Syscall6 (/tmp/bin/offloader)

200/202 37573.003: 
	ffffffff82243b17 exc_page_fault ([kernel.kallsyms])
	ffffffff81000c82 asm_exc_page_fault ([kernel.kallsyms])
	ffffffff81ba4f70 _copy_to_iter ([kernel.kallsyms])
	ffffffff81e3b2f0 tcp_recvmsg ([kernel.kallsyms])

200/203 37573.004: 
	ffffffff81e40000 tcp_v4_rcv ([kernel.kallsyms])
	ffffffff81e10000 process_backlog ([kernel.kallsyms])
	ffffffff81e20000 net_rx_action ([kernel.kallsyms])
	ffffffff81100000 handle_softirqs ([kernel.kallsyms])
	ffffffff81e50000 tcp_sendmsg ([kernel.kallsyms])

200/203 37573.005: 
	          96401 runtime.memmove (/tmp/bin/offloader)
	          96402 crypto/tls.(*Conn).writeRecordLocked (/tmp/bin/offloader)

200/204 37573.006: 
	          12345 net/http.(*persistConn).writeLoop (/tmp/bin/offloader)

 300/300 37580.000: 
	          4a1b2c crypto/internal/fips140/aes/gcm.gcmAesEnc.abi0 (/tmp/bin/offloader)
`

func TestPerfSplit(t *testing.T) {
	samples, err := parsePerfScript(strings.NewReader(perfScriptExcerpt))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 7 {
		t.Fatalf("parsed %d samples, want 7", len(samples))
	}
	if f := samples[1].frames[0]; f.sym != "_copy_to_iter" || !f.kernel {
		t.Fatalf("frame %+v, want _copy_to_iter in the kernel", f)
	}
	pid, n, rows := perfSplit(samples)
	if pid != "200" || n != 6 {
		t.Fatalf("split process %s with %d samples, want 200 with 6", pid, n)
	}
	// Each sample counts once, in the first class it matches: the page
	// fault inside tcp_recvmsg is a page fault; the softirq that a
	// tcp_sendmsg ran is loopback receive, not the send.
	want := map[string]float64{
		"user: AES-GCM sealing (gcmAesEnc)": 1,
		"user: memmove (crypto/tls's copy of each TLS 1.3 record's plaintext, the record batcher)": 1,
		"user: the rest (HTTP, scheduler, GC, the pipeline)":                                       1,
		"kernel: loopback receive in softirq (the peer's TCP receive, run on this process's CPU)":  1,
		"kernel: page faults":                1,
		"kernel: socket reads (tcp_recvmsg)": 1,
	}
	sum := 0.0
	for _, r := range rows {
		sum += r.Share
		if got, w := r.Share*6, want[r.Class]; got < w-1e-9 || got > w+1e-9 {
			t.Errorf("%s: %.0f samples, want %.0f", r.Class, got, w)
		}
	}
	if sum < 1-1e-9 || sum > 1+1e-9 {
		t.Errorf("shares sum to %.3f, want 1", sum)
	}
	if _, err := parsePerfScript(strings.NewReader("not a header\n")); err == nil {
		t.Error("a line that is no sample header parsed")
	}
}
