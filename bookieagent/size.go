package bookieagent

import (
	"fmt"
	"strings"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Byte multiples (internal/units parses and formats every size).
const (
	KiB = units.KiB
	MiB = units.MiB
	GiB = units.GiB
	TiB = units.TiB
)

// JVMMemory is what JVMDirectMemory found in a JVM option string.
type JVMMemory struct {
	// DirectBytes is the direct-memory limit in bytes.
	DirectBytes int64
	// Source names the flag that produced DirectBytes:
	// "-XX:MaxDirectMemorySize" or "-Xmx (JVM default for direct memory)".
	Source string
	// HeapBytes is -Xmx, or 0 when absent.
	HeapBytes int64
}

// JVMDirectMemory finds the JVM's maximum direct memory in an option string
// such as PULSAR_MEM or BOOKIE_MEM ("-Xms2g -Xmx2g
// -XX:MaxDirectMemorySize=4g"). Without -XX:MaxDirectMemorySize the JVM's
// limit equals the maximum heap, so -Xmx is used (Source says so). It
// returns ErrNoDirectMemory when neither flag is present and ErrBadSize when
// a value does not parse. The last occurrence of a flag wins, as in the JVM.
func JVMDirectMemory(opts string) (JVMMemory, error) {
	var m JVMMemory
	var direct int64 = -1
	for _, f := range strings.Fields(opts) {
		f = strings.Trim(f, `"'`)
		switch {
		case strings.HasPrefix(f, "-XX:MaxDirectMemorySize="):
			v, err := parseJVMSize(strings.TrimPrefix(f, "-XX:MaxDirectMemorySize="))
			if err != nil {
				return JVMMemory{}, fmt.Errorf("%s: %w", f, err)
			}
			direct = v
		case strings.HasPrefix(f, "-Xmx"):
			v, err := parseJVMSize(strings.TrimPrefix(f, "-Xmx"))
			if err != nil {
				return JVMMemory{}, fmt.Errorf("%s: %w", f, err)
			}
			m.HeapBytes = v
		}
	}
	switch {
	case direct > 0:
		m.DirectBytes, m.Source = direct, "-XX:MaxDirectMemorySize"
	case m.HeapBytes > 0:
		m.DirectBytes, m.Source = m.HeapBytes, "-Xmx (JVM default for direct memory)"
	default:
		return JVMMemory{}, fmt.Errorf("%w: no -XX:MaxDirectMemorySize or -Xmx in %q", ErrNoDirectMemory, opts)
	}
	return m, nil
}

// parseJVMSize parses a JVM memory value: digits with an optional k/m/g/t
// suffix (no "B", no fractions).
func parseJVMSize(s string) (int64, error) {
	if s == "" || strings.ContainsAny(s, ".bB") {
		return 0, fmt.Errorf("%w: %q", ErrBadSize, s)
	}
	v, err := units.ParseSize(s)
	if err != nil {
		return 0, err
	}
	if v == 0 {
		return 0, fmt.Errorf("%w: %q is zero", ErrBadSize, s)
	}
	return v, nil
}
