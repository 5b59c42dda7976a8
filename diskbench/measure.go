package diskbench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// Measure checks o's target (Check) and runs one workload on it (run:
// RunJournal, RunEntryLog or RunRandRead with their parameters) into a
// Report: the target, the results, the bytes written and the time taken.
// When run fails the report holds what it measured before; when the check
// fails there is no report.
func Measure(ctx context.Context, o Options, run func(context.Context, Options) ([]Result, error)) (*Report, error) {
	t, err := Check(ctx, o)
	if err != nil {
		return nil, err
	}
	rep := NewReport(t)
	start := time.Now()
	res, err := run(ctx, o)
	rep.Results = append(rep.Results, res...)
	for _, r := range res {
		rep.BytesWritten += r.BytesWritten
	}
	rep.ElapsedSec = time.Since(start).Seconds()
	return rep, err
}

// Only keeps the plan's workloads among ws and drops the others.
func (p *Plan) Only(ws ...Workload) {
	keep := map[Workload]bool{}
	for _, w := range ws {
		keep[w] = true
	}
	if !keep[WorkloadJournal] {
		p.Journal = nil
	}
	if !keep[WorkloadEntryLog] {
		p.EntryLog = nil
	}
	if !keep[WorkloadRandRead] {
		p.RandRead = nil
	}
}

// ParseWorkload returns the workload named s ("journal", "entrylog",
// "randread").
func ParseWorkload(s string) (Workload, bool) {
	switch w := Workload(s); w {
	case WorkloadJournal, WorkloadEntryLog, WorkloadRandRead:
		return w, true
	}
	return "", false
}

// ParsePrealloc returns the preparation named s (Prealloc.String; "" is
// PreallocDefault too).
func ParsePrealloc(s string) (Prealloc, bool) {
	for _, p := range []Prealloc{PreallocDefault, PreallocFallocate, PreallocSparse, PreallocNone} {
		if s == p.String() {
			return p, true
		}
	}
	return PreallocDefault, s == ""
}

// JournalSettingKeys are the bookkeeper.conf keys of JournalSettings, as
// BookKeeper names them.
var JournalSettingKeys = []string{"journalWriteBufferSizeKB", "journalMaxGroupWaitMSec", "journalBufferedWritesThreshold",
	"journalBufferedEntriesThreshold", "journalFlushWhenQueueEmpty", "journalAlignmentSize", "journalFormatVersionToWrite",
	"journalPreAllocSizeMB", "journalMaxSizeMB", "journalRemoveFromPageCache"}

// ReadBookieConf reads the key=value (or key:value) lines of a
// bookkeeper.conf: Java properties without continuation lines, where # and
// ! start comments.
func ReadBookieConf(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, ok = strings.Cut(line, ":")
		}
		if ok {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return kv, nil
}
