package testenv

// Go side of the Java tool's Pulsar client subcommands (produce, read,
// keep-producing, create-partitioned-topic; test/compat/java Client.java).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Message is one produced or read message: its id as the client reports it
// and its payload's length and SHA-256 (hex). Index is the message's number
// in its producer run (property tk-index; -1 when absent), Seed its payload
// seed: the payload is Payload(Seed, Index, Length).
type Message struct {
	MessageID  string `json:"messageId"`
	LedgerID   int64  `json:"ledgerId"`
	EntryID    int64  `json:"entryId"`
	Partition  int    `json:"partition"` // -1: not partitioned
	BatchIndex int    `json:"batchIndex"`
	Topic      string `json:"topic,omitempty"` // read: the partition's topic name
	Index      int64  `json:"index"`
	Seed       int64  `json:"seed,omitempty"`
	Length     int    `json:"length"`
	SHA256     string `json:"sha256"`
	// DueMs, SendMs and AckMs (keep-producing only): when the message was
	// due by the producer's rate, handed to the client and acknowledged, in
	// milliseconds since the producer started.
	DueMs  float64 `json:"dueMs,omitempty"`
	SendMs float64 `json:"sendMs,omitempty"`
	AckMs  float64 `json:"ackMs,omitempty"`
}

// MessageLedger counts the messages of one ledger of one partition.
type MessageLedger struct {
	Partition int   `json:"partition"`
	LedgerID  int64 `json:"ledgerId"`
	Messages  int64 `json:"messages"`
}

// Messages is the result of produce and read.
type Messages struct {
	Topic   string  `json:"topic"`
	Count   int64   `json:"count"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// FirstMessageSeconds (read only): from the client's start to the
	// first message (-1: none arrived).
	FirstMessageSeconds float64 `json:"firstMessageSeconds"`
	// SHA256OfAllPayloads hashes the payloads in produce/read order;
	// SHA256OfSortedDigests the sorted per-message digests (one per line),
	// which does not depend on the order (partitioned topics).
	SHA256OfAllPayloads   string          `json:"sha256OfAllPayloads"`
	SHA256OfSortedDigests string          `json:"sha256OfSortedDigests"`
	Ledgers               []MessageLedger `json:"ledgers"`
	Messages              []Message       `json:"messages"`
}

// LedgerIDs returns the distinct ledgers the messages are in, per partition
// (-1 for a non-partitioned topic).
func (m *Messages) LedgerIDs() map[int][]int64 {
	out := map[int][]int64{}
	for _, l := range m.Ledgers {
		out[l.Partition] = append(out[l.Partition], l.LedgerID)
	}
	return out
}

// ProduceOptions select what Produce sends. Zero values: defaults in brackets.
type ProduceOptions struct {
	Count      int   // messages [100]
	Seed       int64 // payload seed [1]
	FirstIndex int64 // index of the first message [0]
	Size       int   // payload size of every message [1024]; ignored when Sizes is set
	Sizes      []int // payload sizes, cycled by index
	Batch      bool  // enable producer batching [off: one message per entry]
	Extra      []string
}

func (o ProduceOptions) args() []string {
	var a []string
	if o.Count > 0 {
		a = append(a, "--count", strconv.Itoa(o.Count))
	}
	if o.Seed != 0 {
		a = append(a, "--seed", strconv.FormatInt(o.Seed, 10))
	}
	if o.FirstIndex != 0 {
		a = append(a, "--first-index", strconv.FormatInt(o.FirstIndex, 10))
	}
	a = append(a, sizeArgs(o.Size, o.Sizes)...)
	if o.Batch {
		a = append(a, "--batch")
	}
	return append(a, o.Extra...)
}

// sizeArgs are the tool's payload size flags: --sizes a,b,.. (cycled) when
// sizes is set, else --size N when size > 0.
func sizeArgs(size int, sizes []int) []string {
	if len(sizes) > 0 {
		s := make([]string, len(sizes))
		for i, n := range sizes {
			s[i] = strconv.Itoa(n)
		}
		return []string{"--sizes", strings.Join(s, ",")}
	}
	if size > 0 {
		return []string{"--size", strconv.Itoa(size)}
	}
	return nil
}

// Produce sends messages to topic on b with Pulsar's Java client and waits
// for every acknowledgement. Messages are written to a file, not stdout.
func (j *JavaTools) Produce(ctx context.Context, b *Broker, topic string, o ProduceOptions) (*Messages, error) {
	return j.messages(ctx, "produce", append([]string{"--service-url", b.ServiceURL, "--topic", topic}, o.args()...))
}

// ReadOptions tune ReadAll.
type ReadOptions struct {
	// Expect: read until this many messages arrived (error at Timeout);
	// 0: until the broker has no more.
	Expect int
	// Timeout bounds the read [60 s].
	Timeout time.Duration
	// SummaryOnly keeps no per-message records (Messages stays empty,
	// SHA256OfSortedDigests is that of no message): count, bytes,
	// SHA256OfAllPayloads and Ledgers only, for reads of gigabytes.
	SummaryOnly bool
}

// ReadAll reads topic from the earliest position with a Pulsar Reader (all
// partitions of a partitioned topic).
func (j *JavaTools) ReadAll(ctx context.Context, b *Broker, topic string, o ReadOptions) (*Messages, error) {
	a := []string{"--service-url", b.ServiceURL, "--topic", topic}
	if o.Expect > 0 {
		a = append(a, "--expect", strconv.Itoa(o.Expect))
	}
	if o.Timeout > 0 {
		a = append(a, "--timeout-seconds", strconv.Itoa(max(1, int(o.Timeout/time.Second))))
	}
	if o.SummaryOnly {
		a = append(a, "--summary-only")
	}
	return j.messages(ctx, "read", a)
}

func (j *JavaTools) messages(ctx context.Context, sub string, args []string) (*Messages, error) {
	dir, err := os.MkdirTemp("", "tierkeeper-msgs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "messages.json")
	var m Messages
	if err := j.RunJSON(ctx, &m, sub, append(args, "--out", out)...); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("java tool %s: %w", sub, err)
	}
	if err := json.Unmarshal(b, &m.Messages); err != nil {
		return nil, fmt.Errorf("java tool %s: decode messages: %w", sub, err)
	}
	return &m, nil
}

// CreatePartitionedTopicJava creates a partitioned topic with Pulsar's own
// admin client (Broker.CreatePartitionedTopic does the same over REST).
func (j *JavaTools) CreatePartitionedTopicJava(ctx context.Context, b *Broker, topic string, n int) error {
	var res struct {
		Partitions int `json:"partitions"`
	}
	if err := j.RunJSON(ctx, &res, "create-partitioned-topic", "--admin-url", b.WebURL, "--topic", topic, "--partitions", strconv.Itoa(n)); err != nil {
		return err
	}
	if res.Partitions != n {
		return fmt.Errorf("create-partitioned-topic %s: broker reports %d partitions, want %d", topic, res.Partitions, n)
	}
	return nil
}

// KeepProducingOptions configure StartProducer.
type KeepProducingOptions struct {
	Rate  float64 // messages per second [200]
	Seed  int64   // [1]
	Size  int     // [1024]
	Sizes []int
	// MaxDuration stops the producer by itself [10 min].
	MaxDuration time.Duration
	Extra       []string
}

// ProducerResult is what a stopped producer reports.
type ProducerResult struct {
	Sent       int64   `json:"sent"`
	Acked      int64   `json:"acked"`
	Failed     int64   `json:"failed"`
	FirstError string  `json:"firstError"`
	Seconds    float64 `json:"seconds"`
	// AckedMessages are the acknowledged messages, in acknowledgement order.
	AckedMessages []Message `json:"-"`
}

// RunningProducer is a keep-producing process.
type RunningProducer struct {
	dir, out, stop string
	cmd            *exec.Cmd
	done           chan struct{}
	stdout, stderr lockedBuffer
	waitErr        error
	once           sync.Once
	res            *ProducerResult
	resErr         error
}

// StartProducer starts a producer that writes to topic at a steady rate
// until Stop; every acknowledged message is recorded. The process is killed
// when t ends if still running.
func (j *JavaTools) StartProducer(t testing.TB, b *Broker, topic string, o KeepProducingOptions) *RunningProducer {
	t.Helper()
	dir := t.TempDir()
	p := &RunningProducer{dir: dir, out: filepath.Join(dir, "acked.jsonl"), stop: filepath.Join(dir, "stop"), done: make(chan struct{})}
	a := []string{"--service-url", b.ServiceURL, "--topic", topic, "--out", p.out, "--stop-file", p.stop}
	if o.Rate > 0 {
		a = append(a, "--rate", strconv.FormatFloat(o.Rate, 'f', -1, 64))
	}
	if o.Seed != 0 {
		a = append(a, "--seed", strconv.FormatInt(o.Seed, 10))
	}
	a = append(a, sizeArgs(o.Size, o.Sizes)...)
	maxDur := o.MaxDuration
	if maxDur <= 0 {
		maxDur = 10 * time.Minute
	}
	a = append(a, "--max-seconds", strconv.Itoa(int(maxDur/time.Second)+1))
	a = append(a, o.Extra...)
	cmd, cdsDone := j.command("keep-producing", a...)
	cmd.Stdout, cmd.Stderr = &p.stdout, &p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("keep-producing: %v", err)
	}
	p.cmd = cmd
	go func() {
		p.waitErr = cmd.Wait()
		cdsDone(p.waitErr)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// Acked returns how many messages have been acknowledged so far.
func (p *RunningProducer) Acked() int {
	b, err := os.ReadFile(p.out)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// WaitAcked waits until at least n messages are acknowledged, the
// producer ends or timeout passes.
func (p *RunningProducer) WaitAcked(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got := p.Acked()
		if got >= n {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("keep-producing ended after %d acknowledged messages (wanted %d): %v; stderr tail:\n%s", got, n, p.waitErr, tailString(p.stderr.String(), 3000))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("keep-producing: %d acknowledged messages after %s, wanted %d; client log tail:\n%s", got, timeout, n, tailString(p.stderr.String(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// AckedSoFar returns the messages acknowledged so far, in
// acknowledgement order (a record being written is left out).
func (p *RunningProducer) AckedSoFar() ([]Message, error) {
	b, err := os.ReadFile(p.out)
	if err != nil {
		return nil, err
	}
	var out []Message
	rest := string(b) // one conversion: a copy per line made this quadratic
	for {
		l, r, ok := strings.Cut(rest, "\n")
		if !ok {
			break // the last, unterminated line is still being written
		}
		rest = r
		if l == "" {
			continue
		}
		var m Message
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			return nil, fmt.Errorf("keep-producing: acked record %q: %w", l, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// Stop asks the producer to stop (stop file), waits up to 90 s for its
// outstanding sends and returns what it reports plus every acknowledged
// message. Safe to call more than once (also after Terminate).
func (p *RunningProducer) Stop() (*ProducerResult, error) {
	return p.end(func() { _ = os.WriteFile(p.stop, nil, 0o644) })
}

// Terminate is Stop by SIGTERM, as a service manager stops a producer: the
// JVM's shutdown hook finishes the outstanding sends and the report.
func (p *RunningProducer) Terminate() (*ProducerResult, error) {
	return p.end(func() { _ = p.cmd.Process.Signal(syscall.SIGTERM) })
}

func (p *RunningProducer) end(ask func()) (*ProducerResult, error) {
	p.once.Do(func() {
		ask()
		select {
		case <-p.done:
		case <-time.After(90 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
			p.resErr = errors.New("keep-producing did not stop within 90 s (killed)")
			return
		}
		if p.waitErr != nil {
			p.resErr = fmt.Errorf("keep-producing: %v; stderr tail:\n%s", p.waitErr, tailString(p.stderr.String(), 3000))
			return
		}
		var r ProducerResult
		if err := json.Unmarshal([]byte(p.stdout.String()), &r); err != nil {
			p.resErr = fmt.Errorf("keep-producing: decode result: %w (%.300q)", err, p.stdout.String())
			return
		}
		ms, err := p.AckedSoFar()
		if err != nil {
			p.resErr = err
			return
		}
		r.AckedMessages = ms
		if int64(len(r.AckedMessages)) != r.Acked {
			p.resErr = fmt.Errorf("keep-producing reports %d acked messages, recorded %d", r.Acked, len(r.AckedMessages))
			return
		}
		p.res = &r
	})
	return p.res, p.resErr
}

// lockedBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
