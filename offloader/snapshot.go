package offloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/pressure"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// snapshotter gathers what the policy looks at besides the managed
// ledgers: bookie usage, the bookies of candidate ledgers (only while some
// bookie is under pressure), Pulsar namespace policies (always: a
// namespace offload threshold makes the broker offload the topic itself),
// and, through view, the broker's thresholds and topic offload policies.
type snapshotter struct {
	conn    tzk.Reader
	ledgers *metadata.Store
	src     pressure.Source // nil: pressure off
	rules   policy.Rules
	chroot  string // of the configuration metadata store (namespace policies)
	view    *brokerView
	log     *slog.Logger

	mu        sync.Mutex
	ensembles map[int64][]string
	nsCache   map[string]nsEntry
	lastUsage pressure.Reading
}

type nsEntry struct {
	version int32
	pol     *policy.NamespacePolicy
}

// SnapshotReport says what could not be read while building a snapshot.
type SnapshotReport struct {
	PressureErrors []string
	PolicyErrors   []string
	LedgerErrors   []string
	// BrokerErrors: the broker's offload settings could not be read
	// (every topic is refused meanwhile).
	BrokerErrors []string
}

// build returns the policy snapshot for topics.
func (s *snapshotter) build(ctx context.Context, topics []policy.Topic) (policy.Snapshot, SnapshotReport) {
	snap := policy.Snapshot{Topics: topics}
	var rep SnapshotReport
	if s.src != nil {
		var bookies []string
		if s.ledgers != nil {
			w, ro, err := s.ledgers.Bookies(ctx)
			if err != nil {
				rep.PressureErrors = append(rep.PressureErrors, fmt.Sprintf("list bookies: %v", err))
			}
			bookies = append(w, ro...)
		}
		rd := s.src.Read(ctx, bookies)
		s.mu.Lock()
		s.lastUsage = rd
		s.mu.Unlock()
		for _, e := range rd.Errors {
			rep.PressureErrors = append(rep.PressureErrors, e.Error())
		}
		snap.BookieUsage = rd.Usage
		pressured := false
		for _, u := range rd.Usage {
			if u >= s.rules.Pressure.Threshold {
				pressured = true
			}
		}
		if pressured {
			rep.LedgerErrors = s.fillBookies(ctx, snap.Topics)
		}
	}
	snap.Namespaces, snap.NamespaceErrors = s.namespacePolicies(ctx, topics)
	for ns, e := range snap.NamespaceErrors {
		rep.PolicyErrors = append(rep.PolicyErrors, ns+": "+e)
	}
	sort.Strings(rep.PolicyErrors)
	if s.view != nil {
		snap.Broker = s.view.broker(ctx)
		if snap.Broker.Err != "" {
			rep.BrokerErrors = append(rep.BrokerErrors, "broker offload settings: "+snap.Broker.Err)
		}
		snap.TopicPolicies = s.view.topicPolicies(ctx, topics, &s.rules)
	}
	return snap, rep
}

// fillBookies sets Ledger.Bookies of every closed, not yet offloaded
// ledger (cached per ledger id: closed ledgers keep their ensembles).
func (s *snapshotter) fillBookies(ctx context.Context, topics []policy.Topic) []string {
	if s.ledgers == nil {
		return nil
	}
	var errs []string
	for ti := range topics {
		ls := topics[ti].Ledgers
		for li := range ls {
			l := &ls[li]
			if li == len(ls)-1 || (l.State != mledger.StateBookKeeper && l.State != mledger.StateOffloading) {
				continue
			}
			s.mu.Lock()
			b, ok := s.ensembles[l.ID]
			s.mu.Unlock()
			if !ok {
				md, err := s.ledgers.ReadLedger(ctx, l.ID)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s ledger %d: %v", topics[ti].ML, l.ID, err))
					if tzk.Unavailable(err) || ctx.Err() != nil {
						return errs
					}
					continue
				}
				seen := map[string]bool{}
				for _, seg := range md.Segments {
					for _, id := range seg.Bookies {
						if !seen[id] {
							seen[id] = true
							b = append(b, id)
						}
					}
				}
				sort.Strings(b)
				s.mu.Lock()
				if s.ensembles == nil {
					s.ensembles = map[int64][]string{}
				}
				s.ensembles[l.ID] = b
				s.mu.Unlock()
			}
			// The write goes into the discovery cache's ledgers (the
			// snapshot shares them), where it stays for the next
			// evaluation. An earlier evaluation's candidate lists read
			// Bookies of the ledgers they hold, so it is written only
			// when it changes: once per ledger, before any list holds
			// the ledger as a pressure candidate.
			if !sameSlice(l.Bookies, b) {
				l.Bookies = b
			}
		}
	}
	return errs
}

// namespacePolicies reads /admin/policies/<ns> of every namespace holding
// one of topics (v2 names only: v1 namespaces keep policies at
// /admin/policies/<tenant>/<cluster>/<ns>, read the same way), and says
// which could not be read.
func (s *snapshotter) namespacePolicies(ctx context.Context, topics []policy.Topic) (map[string]*policy.NamespacePolicy, map[string]string) {
	nss := map[string]bool{}
	for _, t := range topics {
		nss[t.Topic.NamespacePath()] = true
	}
	out := map[string]*policy.NamespacePolicy{}
	errs := map[string]string{}
	for ns := range nss {
		p := s.chroot + "/admin/policies/" + ns
		data, st, err := tzk.Get(ctx, s.conn, p)
		if errors.Is(err, gozk.ErrNoNode) {
			continue
		}
		if err != nil {
			errs[ns] = fmt.Sprintf("read %s: %v", p, err)
			continue
		}
		s.mu.Lock()
		e, ok := s.nsCache[ns]
		s.mu.Unlock()
		if !ok || e.version != st.Version {
			pol, err := policy.ParseNamespacePolicies(data)
			if err != nil {
				errs[ns] = fmt.Sprintf("%s: %v", p, err)
				continue
			}
			e = nsEntry{version: st.Version, pol: pol}
			s.mu.Lock()
			if s.nsCache == nil {
				s.nsCache = map[string]nsEntry{}
			}
			s.nsCache[ns] = e
			s.mu.Unlock()
		}
		out[ns] = e.pol
	}
	return out, errs
}

// sameSlice says whether a and b are the same slice (not only equal).
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
