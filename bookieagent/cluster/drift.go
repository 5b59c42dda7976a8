package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/internal/httpjson"
)

// RunningConfig is the configuration a bookie runs with.
type RunningConfig struct {
	// Source is where the keys came from: the bookie's server_config URL,
	// or its agent's /conf (the agent's copy of bookkeeper.conf).
	Source string `json:"source"`
	// FromAgent is true when Source is the agent's conf (the bookie's
	// HTTP admin server could not be read; Errors says why).
	FromAgent bool              `json:"from_agent,omitempty"`
	Keys      map[string]string `json:"keys,omitempty"`
	// Errors lists what could not be read, in order of preference.
	Errors []string `json:"errors,omitempty"`
}

// readRunningConfigs reads every bookie's running configuration, each
// request bounded by o.Timeout: the bookie's HTTP admin server, else its
// agent's /conf.
func readRunningConfigs(ctx context.Context, o Options, v *View) {
	sem := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	for i := range v.Bookies {
		b := &v.Bookies[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rc := &RunningConfig{}
			addr := b.HTTP
			if addr == "" {
				addr = net.JoinHostPort(hostOf(b.ID), strconv.Itoa(o.BookieHTTPPort))
			}
			u := "http://" + addr + bookieagent.ServerConfigPath
			var keys map[string]any
			err := getJSON(ctx, o, ErrBookieHTTP, u, &keys, false)
			if err == nil {
				rc.Source, rc.Keys = httpjson.RedactURL(u), bookieagent.ServerConfigKeys(keys)
				b.Config = rc
				return
			}
			rc.Errors = append(rc.Errors, err.Error())
			if b.Agent == "" {
				rc.Errors = append(rc.Errors, "no agent to fall back on (its /conf)")
				b.Config = rc
				return
			}
			var st bookieagent.ConfState
			if err := getJSON(ctx, o, ErrAgent, b.Agent+"/conf", &st, false); err != nil {
				rc.Errors = append(rc.Errors, err.Error())
				b.Config = rc
				return
			}
			rc.Source, rc.FromAgent, rc.Keys = httpjson.RedactURL(b.Agent)+"/conf ("+st.Path+")", true, st.Keys
			b.Config = rc
		}()
	}
	wg.Wait()
}

// driftKeys are the bookkeeper.conf keys compared when no recommendation
// names them: the ones the agent recommends.
var driftKeys = []string{
	"journalDirectories", "ledgerDirectories", "journalWriteBufferSizeKB", "journalBufferedWritesThreshold",
	"journalMaxGroupWaitMSec", "journalAlignmentSize", "writeBufferSizeBytes", "readBufferSizeBytes",
	"flushEntrylogBytes", "dbStorage_writeCacheMaxSizeMb", "dbStorage_readAheadCacheMaxSizeMb",
	"isThrottleByBytes", "compactionRateByBytes", "gcWaitTime", "minorCompactionInterval",
	"minorCompactionThreshold", "majorCompactionInterval", "majorCompactionThreshold",
	"dbStorage_rocksDB_writeBufferSizeMB",
}

// DriftValue is what one bookie uses for a key.
type DriftValue struct {
	Value string `json:"value"`
	// Source: "running" (its HTTP admin server), "agent conf" (its
	// agent's copy of bookkeeper.conf) or "BookKeeper default" (the key
	// is not set).
	Source string `json:"source"`
	// OffRecommendation is true when the value is not the recommended one.
	OffRecommendation bool `json:"off_recommendation"`
}

// DriftKey is one key over the fleet.
type DriftKey struct {
	Key string `json:"key"`
	// Recommended is the merged recommendation ("" without one).
	Recommended string                `json:"recommended,omitempty"`
	Bookies     map[string]DriftValue `json:"bookies"`
	// OffRecommendation lists the bookies not on the recommended value.
	OffRecommendation []string `json:"off_recommendation,omitempty"`
	// Values groups the bookies by the value they use, when they do not
	// all use the same (directory keys compare by count).
	Values map[string][]string `json:"values,omitempty"`
}

// Drift is the fleet's running configuration against the recommendation
// and between the bookies.
type Drift struct {
	// Bookies are those whose configuration was read.
	Bookies []string `json:"bookies"`
	// Unread maps the others to why.
	Unread map[string]string `json:"unread,omitempty"`
	// FromAgent lists the bookies whose keys came from their agent's conf.
	FromAgent []string   `json:"from_agent,omitempty"`
	Keys      []DriftKey `json:"keys"`
}

// Differing returns the keys where some bookie is off the recommendation
// or the bookies disagree.
func (d *Drift) Differing() []DriftKey {
	var out []DriftKey
	for _, k := range d.Keys {
		if len(k.OffRecommendation) > 0 || len(k.Values) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// ComputeDrift compares the running configurations read into v (Read with
// RunningConfig) per key with the merged recommendation m (nil: only
// between the bookies) and between the bookies.
func ComputeDrift(v *View, m *Merged) *Drift {
	d := &Drift{Unread: map[string]string{}}
	rec := map[string]string{}
	var keys []string
	if m != nil && m.Recommendation != nil {
		for _, s := range m.Recommendation.Settings {
			if s.File == bookieagent.FileRocksDB || s.NeedsInput != "" {
				continue
			}
			rec[s.Key] = s.Value
			keys = append(keys, s.Key)
		}
	} else {
		keys = slices.Clone(driftKeys)
	}
	for _, b := range v.Bookies {
		switch {
		case b.Config == nil:
			d.Unread[b.ID] = "not read"
		case b.Config.Keys == nil:
			d.Unread[b.ID] = strings.Join(b.Config.Errors, "; ")
		default:
			d.Bookies = append(d.Bookies, b.ID)
			if b.Config.FromAgent {
				d.FromAgent = append(d.FromAgent, b.ID)
			}
		}
	}
	sort.Strings(d.Bookies)
	sort.Strings(d.FromAgent)
	if len(d.Unread) == 0 {
		d.Unread = nil
	}
	byID := map[string]*Bookie{}
	for i := range v.Bookies {
		byID[v.Bookies[i].ID] = &v.Bookies[i]
	}
	for _, key := range keys {
		dk := DriftKey{Key: key, Recommended: rec[key], Bookies: map[string]DriftValue{}}
		groups := map[string][]string{}
		for _, id := range d.Bookies {
			c := byID[id].Config
			dv := DriftValue{Source: "running"}
			if c.FromAgent {
				dv.Source = "agent conf"
			}
			val, ok := c.Keys[key]
			if !ok && key == "journalDirectories" {
				val, ok = c.Keys["journalDirectory"]
			}
			if !ok || strings.TrimSpace(val) == "" {
				dv.Source = "BookKeeper default"
				if def, has := bookieagent.Default(key); has {
					val = def
				} else {
					val = "(default)"
				}
			}
			dv.Value = strings.TrimSpace(val)
			if dk.Recommended != "" {
				dv.OffRecommendation = !sameSetting(key, dv.Value, dk.Recommended)
				if dv.OffRecommendation {
					dk.OffRecommendation = append(dk.OffRecommendation, id)
				}
			}
			dk.Bookies[id] = dv
			norm := normSetting(key, dv.Value)
			groups[norm] = append(groups[norm], id)
		}
		if len(groups) > 1 {
			dk.Values = groups
		}
		d.Keys = append(d.Keys, dk)
	}
	return d
}

func isDirKey(key string) bool {
	return key == "journalDirectories" || key == "ledgerDirectories" || key == "indexDirectories"
}

// normSetting is the form two values of a key are compared in: the
// directory count for directory lists (their paths differ by node), the
// number for numbers, else the lower-cased text.
func normSetting(key, v string) string {
	if isDirKey(key) {
		return fmt.Sprintf("%d dir(s)", bookieagent.DirCount(v))
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strings.ToLower(v)
}

func sameSetting(key, a, b string) bool { return normSetting(key, a) == normSetting(key, b) }
