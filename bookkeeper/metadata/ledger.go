package metadata

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

// State is a ledger's state, numbered as in LedgerMetadataFormat.State.
type State int32

// Ledger states.
const (
	StateOpen       State = 1
	StateInRecovery State = 2
	StateClosed     State = 3
)

// String returns the state's name as BookKeeper spells it.
func (s State) String() string {
	switch s {
	case StateOpen:
		return "OPEN"
	case StateInRecovery:
		return "IN_RECOVERY"
	case StateClosed:
		return "CLOSED"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// Segment is one ensemble of a ledger: the bookies holding entries from
// FirstEntryID up to the next segment's FirstEntryID.
type Segment struct {
	FirstEntryID int64
	// Bookies are bookie ids in ensemble order (order matters: it drives the
	// round-robin write set).
	Bookies []string
}

// LedgerMetadata is a ledger's metadata, whatever format it was stored in.
type LedgerMetadata struct {
	LedgerID int64
	// FormatVersion is the metadata format the znode used (1, 2 or 3).
	FormatVersion int
	EnsembleSize  int
	WriteQuorum   int
	AckQuorum     int
	State         State
	// LastEntryID and Length are meaningful for CLOSED ledgers only
	// (-1 and 0 otherwise); LastEntryID -1 is an empty ledger.
	LastEntryID int64
	Length      int64
	// Segments are ordered by FirstEntryID; the first starts at 0.
	Segments []Segment
	// HasPassword reports whether the metadata records the digest type and
	// password (v2/v3 written by BookKeeper >= 4.2). Without it DigestType is
	// digest.Unknown and the reader must be told the digest and password.
	HasPassword bool
	DigestType  digest.Type
	Password    []byte
	// Ctime is the creation time in Unix milliseconds: the stored ctime, else
	// the znode's creation time when read from ZooKeeper (CtimeStored false).
	Ctime       int64
	CtimeStored bool
	// CustomMetadata holds application metadata (Pulsar: application,
	// component, pulsar/managed-ledger, ...). Nil when there is none.
	CustomMetadata map[string][]byte
	// CToken is the creator token (v3 only; 0 when absent).
	CToken    int64
	HasCToken bool

	// Version is the znode version the metadata was read at (Stat.Version),
	// used for compare-and-delete; -1 when not read from ZooKeeper.
	Version int32
}

// Closed reports whether the ledger is CLOSED.
func (m *LedgerMetadata) Closed() bool { return m.State == StateClosed }

// EnsembleAt returns the segment holding entryID: the one with the largest
// FirstEntryID <= entryID.
func (m *LedgerMetadata) EnsembleAt(entryID int64) (Segment, error) {
	i := sort.Search(len(m.Segments), func(i int) bool { return m.Segments[i].FirstEntryID > entryID })
	if i == 0 {
		return Segment{}, fmt.Errorf("%w: no ensemble for entry %d of ledger %d", ErrCorrupt, entryID, m.LedgerID)
	}
	return m.Segments[i-1], nil
}

// WriteSet returns the bookie ids that store entryID, in the order a reader
// should try them: BookKeeper's round-robin distribution, ensemble index
// (entryID + i) mod EnsembleSize for i in 0..WriteQuorum-1.
func (m *LedgerMetadata) WriteSet(entryID int64) ([]string, error) {
	seg, err := m.EnsembleAt(entryID)
	if err != nil {
		return nil, err
	}
	e := len(seg.Bookies)
	if e != m.EnsembleSize || m.WriteQuorum < 1 || m.WriteQuorum > e || entryID < 0 {
		return nil, fmt.Errorf("%w: ensemble of %d for E=%d W=%d, entry %d", ErrCorrupt, e, m.EnsembleSize, m.WriteQuorum, entryID)
	}
	ws := make([]string, m.WriteQuorum)
	for i := range ws {
		ws[i] = seg.Bookies[int((uint64(entryID)+uint64(i))%uint64(e))]
	}
	return ws, nil
}

// Validate checks the invariants a reader relies on: 1 <= A <= W <= E, at
// least one segment, the first at entry 0, segments strictly increasing and
// each exactly E non-empty bookie ids; for CLOSED ledgers lastEntryId >= -1
// and length >= 0.
func (m *LedgerMetadata) Validate() error {
	if m.EnsembleSize < 1 || m.WriteQuorum < 1 || m.AckQuorum < 1 ||
		m.WriteQuorum > m.EnsembleSize || m.AckQuorum > m.WriteQuorum {
		return fmt.Errorf("%w: ledger %d: ensemble %d, write quorum %d, ack quorum %d",
			ErrCorrupt, m.LedgerID, m.EnsembleSize, m.WriteQuorum, m.AckQuorum)
	}
	if len(m.Segments) == 0 {
		return fmt.Errorf("%w: ledger %d has no ensemble", ErrCorrupt, m.LedgerID)
	}
	if m.Segments[0].FirstEntryID != 0 {
		return fmt.Errorf("%w: ledger %d: first ensemble starts at entry %d", ErrCorrupt, m.LedgerID, m.Segments[0].FirstEntryID)
	}
	for i, s := range m.Segments {
		if i > 0 && s.FirstEntryID <= m.Segments[i-1].FirstEntryID {
			return fmt.Errorf("%w: ledger %d: ensembles not increasing at entry %d", ErrCorrupt, m.LedgerID, s.FirstEntryID)
		}
		if len(s.Bookies) != m.EnsembleSize {
			return fmt.Errorf("%w: ledger %d: ensemble at entry %d has %d bookies, ensemble size is %d",
				ErrCorrupt, m.LedgerID, s.FirstEntryID, len(s.Bookies), m.EnsembleSize)
		}
		for _, b := range s.Bookies {
			if b == "" {
				return fmt.Errorf("%w: ledger %d: empty bookie id in ensemble at entry %d", ErrCorrupt, m.LedgerID, s.FirstEntryID)
			}
		}
	}
	if m.State == StateClosed && (m.LastEntryID < -1 || m.Length < 0) {
		return fmt.Errorf("%w: ledger %d closed with lastEntryId %d, length %d", ErrCorrupt, m.LedgerID, m.LastEntryID, m.Length)
	}
	if m.State != StateOpen && m.State != StateInRecovery && m.State != StateClosed {
		return fmt.Errorf("%w: ledger %d: state %v", ErrCorrupt, m.LedgerID, m.State)
	}
	return nil
}

const headerKey = "BookieMetadataFormatVersion\t"

// Parse decodes ledger metadata znode data (any of the formats v1, v2, v3)
// for ledger ledgerID. The result is validated (see Validate); Version is
// set to -1.
func Parse(ledgerID int64, data []byte) (*LedgerMetadata, error) {
	if !bytes.HasPrefix(data, []byte(headerKey)) {
		return nil, fmt.Errorf("%w: ledger %d: missing %q header (%d bytes)", ErrCorrupt, ledgerID, strings.TrimSpace(headerKey), len(data))
	}
	rest := data[len(headerKey):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 || nl > 10 {
		return nil, fmt.Errorf("%w: ledger %d: unterminated format version", ErrCorrupt, ledgerID)
	}
	version, err := strconv.Atoi(string(rest[:nl]))
	if err != nil {
		return nil, fmt.Errorf("%w: ledger %d: format version %q", ErrCorrupt, ledgerID, rest[:nl])
	}
	body := rest[nl+1:]
	var m *LedgerMetadata
	switch version {
	case 3:
		m, err = parseV3(ledgerID, body)
	case 2:
		m, err = parseV2(ledgerID, body)
	case 1:
		m, err = parseV1(ledgerID, body)
	default:
		return nil, fmt.Errorf("%w: ledger %d: format version %d not in 1..3", ErrCorrupt, ledgerID, version)
	}
	if err != nil {
		return nil, err
	}
	m.Version = -1
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

func parseV3(ledgerID int64, body []byte) (*LedgerMetadata, error) {
	size, n := binary.Uvarint(body)
	if n <= 0 || size > math.MaxInt32 {
		return nil, fmt.Errorf("%w: ledger %d: bad varint length prefix", ErrCorrupt, ledgerID)
	}
	body = body[n:]
	if uint64(len(body)) < size {
		return nil, fmt.Errorf("%w: ledger %d: protobuf truncated: %d of %d bytes", ErrCorrupt, ledgerID, len(body), size)
	}
	var f bkproto.LedgerMetadataFormat
	if err := proto.Unmarshal(body[:size], &f); err != nil {
		return nil, fmt.Errorf("%w: ledger %d: %v", ErrCorrupt, ledgerID, err)
	}
	return fromProto(ledgerID, 3, &f)
}

func parseV2(ledgerID int64, body []byte) (*LedgerMetadata, error) {
	var f bkproto.LedgerMetadataFormat
	if err := prototext.Unmarshal(body, &f); err != nil {
		return nil, fmt.Errorf("%w: ledger %d: text format: %v", ErrCorrupt, ledgerID, err)
	}
	return fromProto(ledgerID, 2, &f)
}

// FromProto converts a LedgerMetadataFormat message (as stored in v2/v3
// metadata, or in a Pulsar offload index) to LedgerMetadata.
func FromProto(ledgerID int64, f *bkproto.LedgerMetadataFormat) (*LedgerMetadata, error) {
	m, err := fromProto(ledgerID, 3, f)
	if err != nil {
		return nil, err
	}
	m.Version = -1
	return m, m.Validate()
}

func fromProto(ledgerID int64, version int, f *bkproto.LedgerMetadataFormat) (*LedgerMetadata, error) {
	m := &LedgerMetadata{
		LedgerID:      ledgerID,
		FormatVersion: version,
		EnsembleSize:  int(f.GetEnsembleSize()),
		WriteQuorum:   int(f.GetQuorumSize()),
		AckQuorum:     int(f.GetQuorumSize()),
		State:         State(f.GetState()),
		LastEntryID:   -1,
	}
	if f.AckQuorumSize != nil {
		m.AckQuorum = int(f.GetAckQuorumSize())
	}
	if m.State == StateClosed {
		// BookKeeper takes lastEntryId/length only for closed ledgers.
		m.LastEntryID = f.GetLastEntryId()
		if f.LastEntryId == nil {
			return nil, fmt.Errorf("%w: ledger %d: closed without lastEntryId", ErrCorrupt, ledgerID)
		}
		m.Length = f.GetLength()
	}
	if f.Password != nil {
		// As in BookKeeper: the digest type counts only with a password.
		m.HasPassword = true
		m.Password = bytes.Clone(f.Password)
		if m.Password == nil {
			m.Password = []byte{}
		}
		m.DigestType = digest.Type(f.GetDigestType())
		if !m.DigestType.Valid() {
			return nil, fmt.Errorf("%w: ledger %d: digest type %d", ErrCorrupt, ledgerID, f.GetDigestType())
		}
	}
	if f.Ctime != nil {
		m.Ctime, m.CtimeStored = f.GetCtime(), true
	}
	if f.CToken != nil {
		m.CToken, m.HasCToken = f.GetCToken(), true
	}
	for _, s := range f.GetSegment() {
		m.Segments = append(m.Segments, Segment{FirstEntryID: s.GetFirstEntryId(), Bookies: append([]string(nil), s.GetEnsembleMember()...)})
	}
	if len(f.GetCustomMetadata()) > 0 {
		m.CustomMetadata = make(map[string][]byte, len(f.GetCustomMetadata()))
		for _, e := range f.GetCustomMetadata() {
			v := bytes.Clone(e.GetValue())
			if v == nil {
				v = []byte{}
			}
			m.CustomMetadata[e.GetKey()] = v
		}
	}
	return m, nil
}

const v1InRecovery = -102

func parseV1(ledgerID int64, body []byte) (*LedgerMetadata, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: ledger %d: v1: %s", ErrCorrupt, ledgerID, fmt.Sprintf(format, args...))
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), len(body)+1)
	var lines []string
	for sc.Scan() {
		lines = append(lines, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if len(lines) < 3 {
		return nil, bad("%d lines, need at least 3", len(lines))
	}
	wq, err1 := strconv.ParseInt(lines[0], 10, 32)
	es, err2 := strconv.ParseInt(lines[1], 10, 32)
	length, err3 := strconv.ParseInt(lines[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, bad("quorum/ensemble/length lines %q %q %q", lines[0], lines[1], lines[2])
	}
	m := &LedgerMetadata{
		LedgerID: ledgerID, FormatVersion: 1, EnsembleSize: int(es), WriteQuorum: int(wq), AckQuorum: int(wq),
		State: StateOpen, LastEntryID: -1,
	}
	for _, line := range lines[3:] {
		parts := strings.Split(line, "\t")
		if len(parts) < 2 {
			return nil, bad("line %q has no tab-separated fields", line)
		}
		first, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			return nil, bad("entry id %q", parts[0])
		}
		if parts[1] == "CLOSED" {
			if first == v1InRecovery {
				m.State = StateInRecovery
			} else {
				m.State, m.LastEntryID, m.Length = StateClosed, first, length
			}
			break
		}
		m.Segments = append(m.Segments, Segment{FirstEntryID: first, Bookies: parts[1:]})
	}
	return m, nil
}

// Proto converts m to the LedgerMetadataFormat message, as BookKeeper
// builds it for v3 metadata.
func (m *LedgerMetadata) Proto() *bkproto.LedgerMetadataFormat {
	f := &bkproto.LedgerMetadataFormat{
		QuorumSize:    proto.Int32(int32(m.WriteQuorum)),
		AckQuorumSize: proto.Int32(int32(m.AckQuorum)),
		EnsembleSize:  proto.Int32(int32(m.EnsembleSize)),
		Length:        proto.Int64(m.Length),
		LastEntryId:   proto.Int64(m.LastEntryID),
		State:         bkproto.LedgerMetadataFormat_State(m.State).Enum(),
	}
	if m.CtimeStored {
		f.Ctime = proto.Int64(m.Ctime)
	}
	if m.HasPassword {
		f.DigestType = bkproto.LedgerMetadataFormat_DigestType(m.DigestType).Enum()
		f.Password = bytes.Clone(m.Password)
		if f.Password == nil {
			f.Password = []byte{}
		}
	}
	keys := make([]string, 0, len(m.CustomMetadata))
	for k := range m.CustomMetadata {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f.CustomMetadata = append(f.CustomMetadata, &bkproto.LedgerMetadataFormatCMetadataMapEntry{Key: proto.String(k), Value: m.CustomMetadata[k]})
	}
	for _, s := range m.Segments {
		f.Segment = append(f.Segment, &bkproto.LedgerMetadataFormat_Segment{FirstEntryId: proto.Int64(s.FirstEntryID), EnsembleMember: append([]string(nil), s.Bookies...)})
	}
	if m.HasCToken {
		f.CToken = proto.Int64(m.CToken)
	}
	return f
}

// Marshal encodes m as znode data in metadata format version 1, 2 or 3, as
// BookKeeper writes it. The reader never writes metadata; tests use this to
// store ledgers in every format.
func Marshal(m *LedgerMetadata, version int) ([]byte, error) {
	out := []byte(headerKey + strconv.Itoa(version) + "\n")
	switch version {
	case 3:
		b, err := proto.Marshal(m.Proto())
		if err != nil {
			return nil, fmt.Errorf("marshal ledger %d: %w", m.LedgerID, err)
		}
		out = binary.AppendUvarint(out, uint64(len(b)))
		return append(out, b...), nil
	case 2:
		f := m.Proto()
		f.CToken = nil // v2 never stores cToken
		b, err := prototext.MarshalOptions{Multiline: true}.Marshal(f)
		if err != nil {
			return nil, fmt.Errorf("marshal ledger %d: %w", m.LedgerID, err)
		}
		return append(out, b...), nil
	case 1:
		var sb strings.Builder
		fmt.Fprintf(&sb, "%d\n%d\n%d\n", m.WriteQuorum, m.EnsembleSize, m.Length)
		for _, s := range m.Segments {
			sb.WriteString(strconv.FormatInt(s.FirstEntryID, 10))
			for _, b := range s.Bookies {
				sb.WriteString("\t" + b)
			}
			sb.WriteString("\n")
		}
		switch m.State {
		case StateInRecovery:
			fmt.Fprintf(&sb, "%d\tCLOSED", v1InRecovery)
		case StateClosed:
			fmt.Fprintf(&sb, "%d\tCLOSED", m.LastEntryID)
		}
		return append(out, sb.String()...), nil
	}
	return nil, fmt.Errorf("marshal ledger %d: unknown metadata format version %d", m.LedgerID, version)
}
