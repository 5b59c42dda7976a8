package bookieagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// NodeFacts are what the rules need of the node beside the measurements:
// its CPUs and the bookie JVM's memory, each with where it came from (as in
// Input; 0: unknown).
type NodeFacts struct {
	CPUs               int
	CPUsSource         string
	DirectMemoryBytes  int64
	DirectMemorySource string
	HeapBytes          int64
	MemoryLimitBytes   int64
	MemoryLimitSource  string
}

// Input returns the recommendation's input: the benchmark's disks and plan
// with the node's facts.
func (r *BenchResult) Input(f NodeFacts) Input {
	return Input{JournalDisks: r.JournalDisks, LedgerDisks: r.LedgerDisks, Bench: &r.Plan,
		CPUs: f.CPUs, CPUsSource: f.CPUsSource, DirectMemoryBytes: f.DirectMemoryBytes, DirectMemorySource: f.DirectMemorySource,
		HeapBytes: f.HeapBytes, MemoryLimitBytes: f.MemoryLimitBytes, MemoryLimitSource: f.MemoryLimitSource}
}

// ReadInput reads an Input saved by WriteInput (recommend --save-input);
// unknown fields are errors, so a file of another kind is not taken for
// one.
func ReadInput(path string) (Input, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Input{}, err
	}
	in, err := DecodeInput(bytes.NewReader(b))
	if err != nil {
		return in, fmt.Errorf("%s: %w", path, err)
	}
	return in, nil
}

// DecodeInput reads an Input as WriteInput writes it; unknown fields are
// an error.
func DecodeInput(r io.Reader) (Input, error) {
	var in Input
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, err
	}
	return in, nil
}

// WriteInput writes in as ReadInput reads it.
func WriteInput(w io.Writer, in Input) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(in)
}

// DirectMemorySpec says where the bookie JVM's direct memory comes from:
// JVM options given (JVMOptions), else a size (Size), else the first of the
// environment variables Env that is set (JVM options too). The names label
// the first two in sources and errors (the command's flags).
type DirectMemorySpec struct {
	JVMOptions, JVMOptionsName string
	Size, SizeName             string
	Env                        []string
	// LookupEnv reads Env. Default os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// DirectMemory is the bookie JVM's direct memory, where it came from and
// the heap (-Xmx) when the JVM options give it.
type DirectMemory struct {
	Bytes     int64
	Source    string
	HeapBytes int64
}

// ResolveDirectMemory returns the direct memory s names. It returns
// ErrNoDirectMemory when none of s's sources gives one, ErrBadSize when a
// size does not parse or is not positive.
func ResolveDirectMemory(s DirectMemorySpec) (DirectMemory, error) {
	if s.JVMOptions != "" {
		m, err := JVMDirectMemory(s.JVMOptions)
		if err != nil {
			return DirectMemory{}, fmt.Errorf("%s: %w", s.JVMOptionsName, err)
		}
		return DirectMemory{Bytes: m.DirectBytes, Source: s.JVMOptionsName + " " + m.Source, HeapBytes: m.HeapBytes}, nil
	}
	if s.Size != "" {
		v, err := units.ParseSize(s.Size)
		if err != nil {
			return DirectMemory{}, fmt.Errorf("%s: %w", s.SizeName, err)
		}
		if v <= 0 {
			return DirectMemory{}, fmt.Errorf("%s: %w: must be positive", s.SizeName, ErrBadSize)
		}
		return DirectMemory{Bytes: v, Source: s.SizeName + " " + s.Size}, nil
	}
	lookup := s.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var tried []string
	for _, name := range s.Env {
		val, ok := lookup(name)
		if !ok || strings.TrimSpace(val) == "" {
			tried = append(tried, name)
			continue
		}
		m, err := JVMDirectMemory(val)
		if err != nil {
			return DirectMemory{}, fmt.Errorf("%s: %w", name, err)
		}
		return DirectMemory{Bytes: m.DirectBytes, Source: name + " " + m.Source, HeapBytes: m.HeapBytes}, nil
	}
	return DirectMemory{}, fmt.Errorf("%w: give %s or set one of %s (e.g. \"-Xmx2g -XX:MaxDirectMemorySize=4g\")",
		ErrNoDirectMemory, s.SizeName, strings.Join(tried, ", "))
}

// MemoryLimitNone is the memory-limit value that says the limit is not
// known.
const MemoryLimitNone = "none"

// ResolveMemoryLimit returns the bookie container's memory limit: value
// parsed as a size (name labels it), MemoryLimitNone for unknown, "" for
// this process's cgroup through host (right when the agent runs in the
// bookie's pod). 0 means unknown or unlimited.
func ResolveMemoryLimit(host HostFS, value, name string) (int64, string, error) {
	switch value {
	case MemoryLimitNone:
		return 0, "", nil
	case "":
		l, src, ok, err := host.MemoryLimit()
		if err != nil {
			return 0, "", fmt.Errorf("%s: reading this process's cgroup: %w (give %s)", name, err, name)
		}
		if !ok {
			return 0, "", nil
		}
		return l, "this process's " + src + " (the agent's own limit: right in the bookie's pod, else give " + name + ")", nil
	}
	v, err := units.ParseSize(value)
	if err != nil || v <= 0 {
		return 0, "", fmt.Errorf("%s %q: want a size like 16g, or none", name, value)
	}
	return v, name + " " + value, nil
}

// DiskGuardFromBookie is the guard from a running bookie's thresholds: its
// HTTP admin server's /api/v1/config/server_config at base, bounded by
// timeout.
func DiskGuardFromBookie(ctx context.Context, client *http.Client, base string, timeout time.Duration, margin float64) (DiskGuard, error) {
	cfg, err := FetchServerConfig(ctx, client, base, timeout)
	if err != nil {
		return DiskGuard{}, err
	}
	return DiskGuardFromServerConfig(cfg, margin, base+" /api/v1/config/server_config")
}

// DiskGuardFromConfFile is DiskGuardFromConf on the bookkeeper.conf at
// path.
func DiskGuardFromConfFile(path string, margin float64) (DiskGuard, error) {
	c, err := ReadConfFile(path, ParseConf)
	if err != nil {
		return DiskGuard{}, err
	}
	return DiskGuardFromConf(c, margin)
}

// ReadConfFile opens and parses one configuration file (ParseConf,
// ParseRocksConf).
func ReadConfFile[T any](path string, parse func(string, io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	return parse(path, f)
}
