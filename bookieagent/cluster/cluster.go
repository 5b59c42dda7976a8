// Package cluster is the bookie agent's cluster view: it reads a BookKeeper
// cluster's metadata from ZooKeeper (bookies, every ledger's ensembles and
// quorums, rack placement, the AutoRecovery under-replication tree), the
// Pulsar managed ledgers that own the ledgers and their offload state, and
// every bookie agent's /recommendation and /report; it merges the agents'
// recommendations into one configuration (Merge) and plans a scale-in of
// bookies (PlanScaleIn).
//
// Facts from BookKeeper 4.17.2 the plan follows: AutoRecovery's auditor
// marks a ledger under-replicated at
// <ledgers root>/underreplication/ledgers/<4 × 4 hex digits of the id>/urL<id
// %010d> (ZkLedgerUnderreplicationManager), with the missing replicas in
// the znode's text; <root>/underreplication/disable pauses it;
// `bookkeeper shell decommissionbookie -bookieid ID` needs the bookie shut
// down (BookKeeperAdmin.decommissionBookie refuses a registered one),
// triggers an audit, waits until every ledger of the bookie is replicated
// and deletes its cookie; a bookie turns read-only through its HTTP API
// (PUT /api/v1/bookie/state/readonly {"readOnly":true}). Every
// AutoRecovery process (a bookie with autoRecoveryDaemonEnabled or an
// autorecovery pod) votes under <root>/underreplication/auditorelection
// (ephemeral sequential V_<seq>, text `bookieId: "…"`); the lowest sequence
// is the auditor (ZkLedgerAuditorManager). Pulsar's rack-aware placement
// reads the bookie → rack map from /bookies {"group": {"bookie id":
// {"rack": …}}} (BookieRackAffinityMapping); its isolation placement
// (IsolatedBookieEnsemblePlacementPolicy) excludes every bookie of a group
// other than the ledger's, whose groups a broker writes into the ledger's
// custom metadata "EnsemblePlacementPolicyConfig" (JSON: policyClass,
// properties isolationBookieGroups / secondaryIsolationBookieGroups). A
// bookie with httpServerEnabled publishes an "httpserver" endpoint in its
// registration and serves its running configuration at
// /api/v1/config/server_config (the keys set, as strings).
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/bookieagent/agentapi"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/httpjson"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

// Sentinel errors.
var (
	// ErrAgent is wrapped by every failure to read an agent.
	ErrAgent = errors.New("bookie agent")
	// ErrBadRemove is returned for a scale-in that names unknown bookies
	// or removes none or all.
	ErrBadRemove = errors.New("bad scale-in")
	// ErrBookieHTTP is wrapped by every failure to read a bookie's HTTP
	// admin server.
	ErrBookieHTTP = errors.New("bookie http")
)

// Options configure Read.
type Options struct {
	// Conn reads ZooKeeper; required for the ledger view (nil: agents
	// only, for Merge).
	Conn metadata.Conn
	// LedgersRoot is the ledgers root znode. Default "/ledgers".
	LedgersRoot string
	// ManagedLedgers reads Pulsar's managed ledgers (offload state), e.g.
	// status.LedgerOwners of the offloader. Nil: not read.
	ManagedLedgers ManagedLedgerReader
	// Agents maps bookie ids to agent base URLs ("http://10.0.0.1:9580").
	Agents map[string]string
	// AgentTemplate is an agent base URL with {host}, replaced by the host
	// of a bookie id, for bookies not in Agents.
	AgentTemplate string
	// AgentURLs are agent base URLs: each is matched to the bookies whose
	// id has its host; one matching none is read on its own (Merge only).
	AgentURLs []string
	// Client is the HTTP client. Default: one with Timeout.
	Client *http.Client
	// Timeout bounds each agent request. Default 10 s.
	Timeout time.Duration
	// Concurrency bounds ledger-metadata reads and agent requests in
	// flight. Default 16.
	Concurrency int
	// RunningConfig reads every bookie's running configuration: its HTTP
	// admin server's /api/v1/config/server_config (the registration's
	// "httpserver" endpoint, else BookieHTTPPort on the bookie's host),
	// else its agent's /conf.
	RunningConfig bool
	// BookieHTTPPort is the bookies' HTTP port when a registration does
	// not publish one. Default 8000 (the Pulsar chart's).
	BookieHTTPPort int
	// Logger receives progress. Default: discard.
	Logger *slog.Logger
}

// ManagedLedgerReader reads Pulsar's managed ledgers for the view: it
// calls visit for every ledger they list, with its managed state
// (offloaded, bookkeeper, open, …) and topic, and returns how many managed
// ledgers it read and, as "name: error", those it could not read.
type ManagedLedgerReader func(ctx context.Context, visit func(ledger int64, state, topic string)) (managed int, errs []string, err error)

// Ledger is what the plan needs of one ledger.
type Ledger struct {
	ID           int64              `json:"id"`
	Ensemble     int                `json:"ensemble"`
	WriteQuorum  int                `json:"write_quorum"`
	AckQuorum    int                `json:"ack_quorum"`
	State        string             `json:"state"`
	Length       int64              `json:"length"`
	LastEntryID  int64              `json:"last_entry_id"`
	Segments     []metadata.Segment `json:"-"`
	ManagedState string             `json:"managed_state"` // offloaded, bookkeeper, open, … or "none"
	Topic        string             `json:"topic,omitempty"`
	// Isolation is the ledger's isolation placement from its custom
	// metadata (nil: none recorded).
	Isolation *Isolation `json:"isolation,omitempty"`
}

// Isolation is Pulsar's isolation placement of one ledger: AutoRecovery
// places a replacement only on a bookie of these groups or of no group.
type Isolation struct {
	Primary   []string `json:"primary"`
	Secondary []string `json:"secondary,omitempty"`
}

// BytesOn estimates the bytes of l a bookie stores: entries are striped
// over each segment's ensemble, every entry on WriteQuorum of its
// Ensemble bookies, so a bookie in a segment holds WriteQuorum ÷ Ensemble
// of that segment's bytes (entry sizes taken as equal: the metadata has
// only the length). Open ledgers have no length: ok is false.
func (l Ledger) BytesOn(bookie string) (bytes float64, in bool, ok bool) {
	if l.State != metadata.StateClosed.String() {
		for _, s := range l.Segments {
			if slices.Contains(s.Bookies, bookie) {
				return 0, true, false
			}
		}
		return 0, false, false
	}
	entries := l.LastEntryID + 1
	for i, s := range l.Segments {
		if !slices.Contains(s.Bookies, bookie) {
			continue
		}
		in = true
		end := entries
		if i+1 < len(l.Segments) {
			end = min(end, l.Segments[i+1].FirstEntryID)
		}
		if entries <= 0 || end <= s.FirstEntryID {
			continue
		}
		seg := float64(l.Length) * float64(end-s.FirstEntryID) / float64(entries)
		bytes += seg * float64(l.WriteQuorum) / float64(l.Ensemble)
	}
	return bytes, in, true
}

// Bookie is one bookie as the cluster sees it.
type Bookie struct {
	ID       string `json:"id"`
	Writable bool   `json:"writable"`
	ReadOnly bool   `json:"readonly"`
	Rack     string `json:"rack,omitempty"`
	// Groups are the /bookies groups naming the bookie.
	Groups []string `json:"groups,omitempty"`
	// HTTP is the bookie's HTTP admin server (host:port) as its
	// registration publishes it ("" when it does not).
	HTTP string `json:"http,omitempty"`
	// Cookie is true when <root>/cookies/<id> exists.
	Cookie bool `json:"cookie"`
	// Config is the bookie's running configuration (RunningConfig).
	Config *RunningConfig `json:"config,omitempty"`
	// Agent is the agent URL the bookie's figures came from.
	Agent          string                      `json:"agent,omitempty"`
	AgentError     string                      `json:"agent_error,omitempty"`
	Report         *agentapi.Report            `json:"report,omitempty"`
	Recommendation *bookieagent.Recommendation `json:"recommendation,omitempty"`
}

// UnderReplicated is one ledger AutoRecovery's auditor marked.
type UnderReplicated struct {
	Ledger   int64    `json:"ledger"`
	Replicas []string `json:"missing_replicas"`
}

// View is the cluster as read.
type View struct {
	Bookies []Bookie `json:"bookies"`
	Ledgers []Ledger `json:"-"`
	// LedgerCount and the quorums in use: the largest ensemble, write
	// and ack quorum of any ledger (and a ledger that has it).
	LedgerCount   int   `json:"ledgers"`
	MaxEnsemble   int   `json:"max_ensemble"`
	MaxWrite      int   `json:"max_write_quorum"`
	MaxAck        int   `json:"max_ack_quorum"`
	MaxEnsembleOf int64 `json:"max_ensemble_ledger"`
	// Racks is true when /bookies assigns racks.
	Racks bool `json:"racks"`
	// UnderReplicated lists the ledgers marked now (at most 1000 read).
	UnderReplicated      []UnderReplicated `json:"under_replicated"`
	AutoRecoveryDisabled bool              `json:"autorecovery_disabled"`
	// Auditor is the elected auditor's bookie id ("" when none is:
	// no AutoRecovery process runs); AutoRecovery lists every process's
	// vote (its bookie id), the auditor first.
	Auditor      string   `json:"auditor"`
	AutoRecovery []string `json:"autorecovery"`
	// LostBookieRecoveryDelay is <root>/underreplication/lostBookieRecoveryDelay
	// in seconds (-1: not set, the auditors' configuration applies).
	LostBookieRecoveryDelay int `json:"lost_bookie_recovery_delay"`
	// Cookies lists <root>/cookies: bookies known to the cluster, running
	// or not.
	Cookies []string `json:"cookies"`
	// ManagedLedgers is the number of Pulsar managed ledgers read (-1:
	// not read).
	ManagedLedgers int `json:"managed_ledgers"`
	// Agents are the agents read without a bookie (AgentURLs).
	Agents []Bookie `json:"agents,omitempty"`
	// Errors lists what could not be read (agents, managed ledgers).
	Errors []string `json:"errors,omitempty"`
}

func (o *Options) defaults() {
	if o.LedgersRoot == "" {
		o.LedgersRoot = metadata.DefaultRoot
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: o.Timeout}
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 16
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.BookieHTTPPort <= 0 {
		o.BookieHTTPPort = 8000
	}
}

// Read builds the view. ZooKeeper failures fail it (every call bounded by
// ctx, see internal/zk); an agent that cannot be read, or managed ledgers
// that cannot be, are recorded in the view and the Bookie.
func Read(ctx context.Context, o Options) (*View, error) {
	o.defaults()
	v := &View{ManagedLedgers: -1, LostBookieRecoveryDelay: -1}
	if o.Conn != nil {
		if err := readZK(ctx, o, v); err != nil {
			return nil, err
		}
	}
	if o.ManagedLedgers != nil && o.Conn != nil {
		owner := map[int64][2]string{}
		n, errs, err := o.ManagedLedgers(ctx, func(ledger int64, state, topic string) { owner[ledger] = [2]string{state, topic} })
		if err != nil {
			v.Errors = append(v.Errors, fmt.Sprintf("managed ledgers: %v", err))
		} else {
			v.ManagedLedgers = n
			for i := range v.Ledgers {
				if w, ok := owner[v.Ledgers[i].ID]; ok {
					v.Ledgers[i].ManagedState, v.Ledgers[i].Topic = w[0], w[1]
				}
			}
			for _, e := range errs {
				v.Errors = append(v.Errors, "managed ledger "+e)
			}
		}
	}
	for i := range v.Ledgers {
		if v.Ledgers[i].ManagedState == "" {
			v.Ledgers[i].ManagedState = "none"
		}
	}
	readAgents(ctx, o, v)
	if o.RunningConfig {
		readRunningConfigs(ctx, o, v)
	}
	return v, nil
}

func readZK(ctx context.Context, o Options, v *View) error {
	store, err := metadata.NewStore(ctx, o.Conn, metadata.StoreOptions{Root: o.LedgersRoot, Logger: o.Logger})
	if err != nil {
		return err
	}
	writable, readonly, err := store.Bookies(ctx)
	if err != nil {
		return fmt.Errorf("list bookies: %w", err)
	}
	for _, id := range writable {
		v.Bookies = append(v.Bookies, Bookie{ID: id, Writable: true})
	}
	for _, id := range readonly {
		v.Bookies = append(v.Bookies, Bookie{ID: id, ReadOnly: true})
	}
	for i := range v.Bookies {
		b := &v.Bookies[i]
		dir := "/available/"
		if b.ReadOnly {
			dir = "/available/readonly/"
		}
		data, _, err := tkzk.Get(ctx, o.Conn, o.LedgersRoot+dir+b.ID)
		if errors.Is(err, zk.ErrNoNode) {
			continue // gone meanwhile
		}
		if err != nil {
			return fmt.Errorf("read registration of %s: %w", b.ID, err)
		}
		if len(data) == 0 {
			continue
		}
		if info, err := metadata.ParseBookieServiceInfo(data); err == nil {
			for _, e := range info.Endpoints {
				if e.ID == "httpserver" && e.Port > 0 {
					h := e.Host
					if h == "" || h == "0.0.0.0" || h == "::" {
						h = hostOf(b.ID)
					}
					b.HTTP = net.JoinHostPort(h, strconv.Itoa(e.Port))
				}
			}
		}
	}
	cookies, err := tkzk.Children(ctx, o.Conn, o.LedgersRoot+"/cookies")
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("list %s/cookies: %w", o.LedgersRoot, err)
	}
	sort.Strings(cookies)
	v.Cookies = cookies
	for i := range v.Bookies {
		v.Bookies[i].Cookie = slices.Contains(cookies, v.Bookies[i].ID)
	}
	ids, err := store.ListLedgers(ctx)
	if err != nil {
		return fmt.Errorf("list ledgers: %w", err)
	}
	o.Logger.Debug("reading ledger metadata", "ledgers", len(ids))
	ledgers := make([]*Ledger, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Concurrency)
	for i, id := range ids {
		g.Go(func() error {
			m, err := store.ReadLedger(gctx, id)
			if errors.Is(err, metadata.ErrNoSuchLedger) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			ledgers[i] = &Ledger{ID: id, Ensemble: m.EnsembleSize, WriteQuorum: m.WriteQuorum, AckQuorum: m.AckQuorum,
				State: m.State.String(), Length: m.Length, LastEntryID: m.LastEntryID, Segments: m.Segments,
				Isolation: isolationOf(m.CustomMetadata)}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("read ledger metadata: %w", err)
	}
	for _, l := range ledgers {
		if l == nil {
			continue
		}
		v.Ledgers = append(v.Ledgers, *l)
		if l.Ensemble > v.MaxEnsemble {
			v.MaxEnsemble, v.MaxEnsembleOf = l.Ensemble, l.ID
		}
		v.MaxWrite, v.MaxAck = max(v.MaxWrite, l.WriteQuorum), max(v.MaxAck, l.AckQuorum)
	}
	v.LedgerCount = len(v.Ledgers)
	if err := readRacks(ctx, o, v); err != nil {
		return err
	}
	return readUnderReplication(ctx, o, v)
}

// readRacks reads Pulsar's /bookies rack map: {"group": {"bookie id":
// {"rack": "/r1", "hostname": "…"}}}.
func readRacks(ctx context.Context, o Options, v *View) error {
	p := path.Join(path.Dir(o.LedgersRoot), "bookies")
	data, _, err := tkzk.Get(ctx, o.Conn, p)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && len(data) == 0) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	var groups map[string]map[string]struct {
		Rack string `json:"rack"`
	}
	if err := json.Unmarshal(data, &groups); err != nil {
		v.Errors = append(v.Errors, fmt.Sprintf("%s: not a rack map: %v", p, err))
		return nil
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		for id, bi := range groups[g] {
			for i := range v.Bookies {
				if v.Bookies[i].ID == id || hostOf(v.Bookies[i].ID) == hostOf(id) && portOf(id) == portOf(v.Bookies[i].ID) {
					if bi.Rack != "" {
						v.Bookies[i].Rack = bi.Rack
					}
					v.Bookies[i].Groups = append(v.Bookies[i].Groups, g)
					v.Racks = v.Racks || bi.Rack != ""
				}
			}
		}
	}
	return nil
}

// isolationPolicy is the class of Pulsar's isolation placement.
const isolationPolicy = "org.apache.pulsar.bookie.rackawareness.IsolatedBookieEnsemblePlacementPolicy"

// isolationOf reads the isolation groups a broker recorded in a ledger's
// custom metadata (EnsemblePlacementPolicyConfig), or nil.
func isolationOf(custom map[string][]byte) *Isolation {
	raw, ok := custom["EnsemblePlacementPolicyConfig"]
	if !ok {
		return nil
	}
	var c struct {
		PolicyClass string         `json:"policyClass"`
		Properties  map[string]any `json:"properties"`
	}
	if json.Unmarshal(raw, &c) != nil || c.PolicyClass != isolationPolicy {
		return nil
	}
	split := func(k string) []string {
		s, _ := c.Properties[k].(string)
		var out []string
		for _, g := range strings.Split(s, ",") {
			if g = strings.TrimSpace(g); g != "" {
				out = append(out, g)
			}
		}
		return out
	}
	iso := &Isolation{Primary: split("isolationBookieGroups"), Secondary: split("secondaryIsolationBookieGroups")}
	if len(iso.Primary) == 0 {
		return nil
	}
	return iso
}

var (
	replicaRE  = regexp.MustCompile(`replica:\s*"([^"]+)"`)
	voteBookie = regexp.MustCompile(`bookieId:\s*"([^"]+)"`)
)

// readAuditors reads the AutoRecovery votes: every V_<seq> child of the
// election znode is one running AutoRecovery process; the lowest sequence
// is the auditor. A vote whose data cannot be read or parsed is an error:
// the plan must not guess who audits.
func readAuditors(ctx context.Context, o Options, v *View, election string) error {
	kids, err := tkzk.Children(ctx, o.Conn, election)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", election, err)
	}
	type vote struct {
		seq int64
		id  string
	}
	var votes []vote
	for _, k := range kids {
		seq, err := strconv.ParseInt(strings.TrimPrefix(k, "V_"), 10, 64)
		if !strings.HasPrefix(k, "V_") || err != nil {
			continue
		}
		data, _, err := tkzk.Get(ctx, o.Conn, election+"/"+k)
		if errors.Is(err, zk.ErrNoNode) {
			continue // that process ended meanwhile
		}
		if err != nil {
			return fmt.Errorf("read auditor vote %s/%s: %w", election, k, err)
		}
		m := voteBookie.FindSubmatch(data)
		if m == nil {
			return fmt.Errorf("auditor vote %s/%s: no bookieId in %.100q", election, k, data)
		}
		votes = append(votes, vote{seq, string(m[1])})
	}
	sort.Slice(votes, func(i, j int) bool { return votes[i].seq < votes[j].seq })
	for _, vt := range votes {
		v.AutoRecovery = append(v.AutoRecovery, vt.id)
	}
	if len(votes) > 0 {
		v.Auditor = votes[0].id
	}
	return nil
}

// maxUnderReplicated bounds the under-replicated ledgers read.
const maxUnderReplicated = 1000

func readUnderReplication(ctx context.Context, o Options, v *View) error {
	base := o.LedgersRoot + "/underreplication"
	if _, _, err := tkzk.Get(ctx, o.Conn, base); errors.Is(err, zk.ErrNoNode) {
		return nil // AutoRecovery never ran here
	} else if err != nil {
		return fmt.Errorf("read %s: %w", base, err)
	}
	if _, _, err := tkzk.Get(ctx, o.Conn, base+"/disable"); err == nil {
		v.AutoRecoveryDisabled = true
	} else if !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("read %s/disable: %w", base, err)
	}
	if err := readAuditors(ctx, o, v, base+"/auditorelection"); err != nil {
		return err
	}
	if data, _, err := tkzk.Get(ctx, o.Conn, base+"/lostBookieRecoveryDelay"); err == nil {
		if d, perr := strconv.Atoi(strings.TrimSpace(string(data))); perr == nil {
			v.LostBookieRecoveryDelay = d
		}
	} else if !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("read %s/lostBookieRecoveryDelay: %w", base, err)
	}
	var walk func(p string, depth int) error
	walk = func(p string, depth int) error {
		kids, err := tkzk.Children(ctx, o.Conn, p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", p, err)
		}
		sort.Strings(kids)
		for _, k := range kids {
			if len(v.UnderReplicated) >= maxUnderReplicated {
				return nil
			}
			if depth == 4 {
				id, err := strconv.ParseInt(strings.TrimPrefix(k, "urL"), 10, 64)
				if !strings.HasPrefix(k, "urL") || err != nil {
					continue
				}
				data, _, err := tkzk.Get(ctx, o.Conn, p+"/"+k)
				if err != nil && !errors.Is(err, zk.ErrNoNode) {
					return fmt.Errorf("read %s/%s: %w", p, k, err)
				}
				u := UnderReplicated{Ledger: id}
				for _, m := range replicaRE.FindAllStringSubmatch(string(data), -1) {
					u.Replicas = append(u.Replicas, m[1])
				}
				v.UnderReplicated = append(v.UnderReplicated, u)
				continue
			}
			if len(k) == 4 {
				if err := walk(p+"/"+k, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(base+"/ledgers", 0)
}

// agentURL is the agent base URL of a bookie, or "".
func agentURL(o Options, id string) string {
	if u, ok := o.Agents[id]; ok {
		return strings.TrimRight(u, "/")
	}
	if o.AgentTemplate == "" {
		return ""
	}
	return strings.TrimRight(strings.ReplaceAll(o.AgentTemplate, "{host}", hostOf(id)), "/")
}

func hostOf(id string) string {
	if h, _, err := net.SplitHostPort(id); err == nil {
		return h
	}
	return id
}

func portOf(id string) string {
	if _, p, err := net.SplitHostPort(id); err == nil {
		return p
	}
	return ""
}

func readAgents(ctx context.Context, o Options, v *View) {
	type job struct {
		b   *Bookie
		url string
	}
	var jobs []job
	agents := map[string]string{}
	for k, u := range o.Agents {
		agents[k] = u
	}
	for _, a := range o.AgentURLs {
		matched := false
		if u, err := url.Parse(a); err == nil {
			for _, b := range v.Bookies {
				if hostOf(b.ID) == u.Hostname() {
					agents[b.ID], matched = a, true
				}
			}
		}
		if !matched {
			v.Agents = append(v.Agents, Bookie{ID: a})
		}
	}
	o.Agents = agents
	for i := range v.Bookies {
		if u := agentURL(o, v.Bookies[i].ID); u != "" {
			jobs = append(jobs, job{&v.Bookies[i], u})
		}
	}
	for i := range v.Agents {
		jobs = append(jobs, job{&v.Agents[i], strings.TrimRight(v.Agents[i].ID, "/")})
	}
	sem := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			j.b.Agent = j.url
			var st bookieagent.BenchState
			if err := getJSON(ctx, o, ErrAgent, j.url+"/recommendation", &st, true); err != nil {
				j.b.AgentError = err.Error()
				return
			}
			if st.Recommendation != nil {
				j.b.Recommendation = st.Recommendation
			} else {
				j.b.AgentError = fmt.Sprintf("%s/recommendation: status %s %s", j.url, st.Status, st.Reason)
			}
			var rep agentapi.Report
			if err := getJSON(ctx, o, ErrAgent, j.url+"/report", &rep, false); err != nil {
				j.b.AgentError = strings.TrimPrefix(j.b.AgentError+"; "+err.Error(), "; ")
				return
			}
			j.b.Report = &rep
		}()
	}
	wg.Wait()
	for _, j := range jobs {
		if j.b.AgentError != "" {
			v.Errors = append(v.Errors, fmt.Sprintf("agent of %s: %s", j.b.ID, j.b.AgentError))
		}
	}
	sort.Strings(v.Errors)
}

// getJSON GETs u within o.Timeout and decodes at most 16 MiB of JSON
// (httpjson.Get); failures wrap kind (ErrAgent, ErrBookieHTTP) and name the
// URL with any password redacted. A 404 is accepted when notFoundOK (the
// agent's /recommendation before a benchmark ran).
func getJSON(ctx context.Context, o Options, kind error, u string, v any, notFoundOK bool) error {
	ho := httpjson.Options{Client: o.Client, Timeout: o.Timeout, What: "the expected JSON"}
	if notFoundOK {
		ho.Accept = []int{http.StatusNotFound}
	}
	if _, err := httpjson.Get(ctx, u, v, ho); err != nil {
		return fmt.Errorf("%w: %w", kind, err)
	}
	return nil
}
