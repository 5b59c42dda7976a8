package cluster

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tierkeeper/tierkeeper/bookieagent"
)

// How Merge combines the nodes' values of each setting. One chart values
// file configures every bookie of the StatefulSet, so each merged value
// must be safe on every node:
//
//   - min: memory shares (every node's JVM gets the same flags), the
//     compaction throttle (the slowest disk's), directory counts (no node
//     gets more directories than its own rounds justified; a faster node
//     only forgoes a gain) and writeBufferSizeBytes (direct memory);
//   - max: waits and alignments set by the slowest or largest device
//     (journalMaxGroupWaitMSec, journalAlignmentSize), and the compaction
//     intervals (the worst-case pass of the largest, slowest disk);
//   - median: throughput settings without a safety side
//     (journalWriteBufferSizeKB, journalBufferedWritesThreshold,
//     flushEntrylogBytes, readBufferSizeBytes).
//
// Anything else must be equal on every node; when it is not, the
// recommendation of the first node (sorted by id) is taken and the merge
// says so.
var mergeRules = map[string]string{
	"journalDirectories": "min", "ledgerDirectories": "min", "writeBufferSizeBytes": "min",
	"dbStorage_writeCacheMaxSizeMb": "min", "dbStorage_readAheadCacheMaxSizeMb": "min", "compactionRateByBytes": "min",
	"dbStorage_rocksDB_writeBufferSizeMB": "min", "write_buffer_size": "min",
	"journalMaxGroupWaitMSec": "max", "journalAlignmentSize": "max", "minorCompactionInterval": "max", "majorCompactionInterval": "max",
	"journalWriteBufferSizeKB": "median", "journalBufferedWritesThreshold": "median", "flushEntrylogBytes": "median",
	"readBufferSizeBytes": "median",
}

// MergedSetting is one setting over the nodes.
type MergedSetting struct {
	Key     string            `json:"key"`
	Value   string            `json:"value"`
	How     string            `json:"how"`
	PerNode map[string]string `json:"per_node"`
	// Differs lists the nodes whose own value is not the merged one.
	Differs []string `json:"differs,omitempty"`
	// Live is, for a directory count (NewBookiesOnly), the directories
	// the live bookies' cookies fix: the merged values keep them, and Value
	// applies to new or re-formatted bookies only.
	Live string `json:"live,omitempty"`
}

// Merged is the cluster's configuration.
type Merged struct {
	Nodes    []string        `json:"nodes"`
	Skipped  []string        `json:"skipped,omitempty"`
	Settings []MergedSetting `json:"settings"`
	// Recommendation holds the merged values in the agent's form (rules
	// and evidence of the merge), for Render (Helm values, conf).
	Recommendation *bookieagent.Recommendation `json:"-"`
}

// Merge combines the recommendations of the nodes (bookie id or agent URL
// → recommendation; nil ones are skipped and listed).
func Merge(recs map[string]*bookieagent.Recommendation) (*Merged, error) {
	m := &Merged{}
	var nodes []string
	for n, r := range recs {
		if r == nil {
			m.Skipped = append(m.Skipped, n)
			continue
		}
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	sort.Strings(m.Skipped)
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%w: no agent gave a recommendation (%d skipped)", ErrAgent, len(m.Skipped))
	}
	m.Nodes = nodes
	first := recs[nodes[0]]
	out := &bookieagent.Recommendation{Memory: first.Memory}
	var warnings []string
	for _, s := range first.Settings {
		ms := MergedSetting{Key: s.Key, How: mergeRules[s.Key], PerNode: map[string]string{}}
		if ms.How == "" {
			ms.How = "same"
		}
		var vals []string
		for _, n := range nodes {
			o, ok := recs[n].Setting(s.Key)
			v := o.Effective()
			if !ok || o.NeedsInput != "" {
				v = ""
			}
			if s.NewBookiesOnly {
				v = strconv.Itoa(bookieagent.DirCount(o.Value))
			}
			ms.PerNode[n] = v
			vals = append(vals, v)
		}
		ms.Value = combine(ms.How, vals)
		if ms.How == "same" && slices.ContainsFunc(vals, func(v string) bool { return v != vals[0] }) {
			ms.How = "same (nodes differ: " + nodes[0] + "'s taken)"
		}
		for _, n := range nodes {
			if ms.PerNode[n] != ms.Value {
				ms.Differs = append(ms.Differs, n)
			}
		}
		merged := s
		merged.Current = ""
		if s.NewBookiesOnly {
			// One values file gives every bookie of the StatefulSet the
			// same directories, and a live bookie refuses to start on
			// directories its cookie does not list: the live bookies'
			// layout stays, the count applies to new bookies only.
			cur, w := liveCurrent(recs, nodes, s.Key)
			merged.Current, ms.Live = cur, cur
			if w != "" {
				warnings = append(warnings, w)
			}
		}
		m.Settings = append(m.Settings, ms)
		merged.Evidence = []string{fmt.Sprintf("merged over %d nodes (%s): %s", len(nodes), ms.How, perNode(ms))}
		if ms.Live != "" {
			merged.Evidence = append(merged.Evidence, fmt.Sprintf("live bookies keep the %d dir(s) their cookies fix: %s", bookieagent.DirCount(ms.Live), ms.Live))
		}
		merged.Rule = fmt.Sprintf("cluster: %s of the nodes' values; per node: %s", ms.How, s.Rule)
		if s.NewBookiesOnly {
			merged.Value = ms.Value + " dir(s) per bookie"
		} else {
			merged.Value = ms.Value
			if ms.Value == "" {
				merged.NeedsInput = s.NeedsInput
			}
		}
		out.Settings = append(out.Settings, merged)
	}
	out.Layout = mergeLayout(recs, nodes, out)
	out.Warnings = append(out.Warnings, warnings...)
	for _, n := range m.Skipped {
		out.Warnings = append(out.Warnings, "no recommendation from "+n)
	}
	m.Recommendation = out
	return m, nil
}

// liveCurrent is the directory list the live bookies' cookies fix for key
// (a NewBookiesOnly setting): "" when no node is a live bookie. When the
// cookies disagree, the first live node's list (by id) is returned with a
// warning naming the others: one values file cannot keep both.
func liveCurrent(recs map[string]*bookieagent.Recommendation, nodes []string, key string) (string, string) {
	var cur, first string
	var differ []string
	for _, n := range nodes {
		o, ok := recs[n].Setting(key)
		if !ok || o.Current == "" {
			continue
		}
		switch {
		case cur == "":
			cur, first = o.Current, n
		case o.Current != cur:
			differ = append(differ, fmt.Sprintf("%s has %s", n, o.Current))
		}
	}
	if len(differ) == 0 {
		return cur, ""
	}
	return cur, fmt.Sprintf("the live bookies' cookies fix different %s: %s has %s, %s; these values keep %s's, and a bookie whose cookie lists other directories will not start with them: give those bookies their own values (or re-format them) before rolling these out",
		key, first, cur, strings.Join(differ, ", "), first)
}

// mergeLayout lays the merged directories out on one disk per role: the
// live bookies' (merged Current, see liveCurrent), else the merged count
// of directories, sized by the smallest node's per-directory capacity.
func mergeLayout(recs map[string]*bookieagent.Recommendation, nodes []string, merged *bookieagent.Recommendation) bookieagent.Layout {
	setting := func(key string) (int, []string) {
		s, ok := merged.Setting(key)
		if !ok {
			return 1, nil
		}
		var cur []string
		if s.Current != "" {
			cur = strings.Split(s.Current, ",")
		}
		return max(1, bookieagent.DirCount(s.Value)), cur
	}
	role := func(key string, get func(bookieagent.Layout) []bookieagent.DiskDirs) []bookieagent.DiskDirs {
		n, cur := setting(key)
		var perDir uint64 = math.MaxUint64
		for _, node := range nodes {
			var total uint64
			dirs := 0
			for _, d := range get(recs[node].Layout) {
				total += d.TotalBytes
				dirs += len(d.Recommended)
			}
			if total > 0 && dirs > 0 {
				perDir = min(perDir, total/uint64(dirs))
			}
		}
		dd := bookieagent.DiskDirs{Disk: "(cluster)", Current: cur}
		if perDir != math.MaxUint64 {
			dd.TotalBytes = perDir * uint64(n)
		}
		for i := range n {
			dd.Recommended = append(dd.Recommended, fmt.Sprintf("dir%d", i))
		}
		return []bookieagent.DiskDirs{dd}
	}
	return bookieagent.Layout{
		Journal: role("journalDirectories", func(l bookieagent.Layout) []bookieagent.DiskDirs { return l.Journal }),
		Ledgers: role("ledgerDirectories", func(l bookieagent.Layout) []bookieagent.DiskDirs { return l.Ledgers }),
	}
}

func perNode(ms MergedSetting) string {
	var parts []string
	for n, v := range ms.PerNode {
		if v == "" {
			v = "?"
		}
		parts = append(parts, n+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// combine applies how to the values; empty values (a node without it)
// are ignored; non-numbers fall back to the first value.
func combine(how string, vals []string) string {
	var nums []float64
	var first string
	for _, v := range vals {
		if v == "" {
			continue
		}
		if first == "" {
			first = v
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return first
		}
		nums = append(nums, f)
	}
	if len(nums) == 0 {
		return first
	}
	slices.Sort(nums)
	var x float64
	switch how {
	case "min":
		x = nums[0]
	case "max":
		x = nums[len(nums)-1]
	case "median":
		x = nums[(len(nums)-1)/2] // lower median: an existing node's value
	default:
		return first
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}
