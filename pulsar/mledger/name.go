package mledger

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Root is the znode under which Pulsar keeps managed-ledger metadata
// (MetaStoreImpl.BASE_NODE), relative to the metadata store's root.
const Root = "/managed-ledgers"

// Topic domains (TopicDomain.value()).
const (
	DomainPersistent    = "persistent"
	DomainNonPersistent = "non-persistent"
)

// partitionSuffix is TopicName.PARTITIONED_TOPIC_SUFFIX.
const partitionSuffix = "-partition-"

// EncodeName encodes s exactly like Java's
// URLEncoder.encode(s, StandardCharsets.UTF_8), which Pulsar's Codec.encode
// applies to a topic's local name to build its managed-ledger name:
//
//   - 'a'-'z', 'A'-'Z', '0'-'9' and ".-*_" stay as they are;
//   - a space becomes '+';
//   - every other byte of the UTF-8 form becomes "%XY" (upper-case hex).
//
// Go's url.QueryEscape differs: it escapes '*' and keeps '~'.
//
// Java strings cannot hold invalid UTF-8 (Java encodes a lone surrogate as
// "%3F"); a Go string can, and its invalid bytes are escaped one by one.
// DecodeName(EncodeName(s)) == s for every valid UTF-8 s.
func EncodeName(s string) string {
	i := 0
	for i < len(s) && keepUnescaped(s[i]) && s[i] != ' ' {
		i++
	}
	if i == len(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			b.WriteByte('+')
		case keepUnescaped(c):
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		}
	}
	return b.String()
}

// keepUnescaped reports whether URLEncoder leaves c as is (space aside).
func keepUnescaped(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	case c == '.', c == '-', c == '*', c == '_', c == ' ':
		return true
	}
	return false
}

// DecodeName decodes s like Java's URLDecoder.decode(s, UTF_8) (Pulsar's
// Codec.decode): '+' becomes a space, runs of "%XY" become the bytes they
// name, and every other character (including non-ASCII ones, '*', '~') is
// kept. Like Java, it rejects a '%' followed by fewer than two characters or
// by non-hex characters, and it accepts Java's Integer.parseInt quirks "%+F"
// (= 0x0F) and "%-0" (= 0x00).
//
// Deliberate difference: escapes that decode to invalid UTF-8 are rejected
// with ErrInvalidName, where Java substitutes U+FFFD. Such names cannot come
// from Pulsar's encoder, and the substitute would not re-encode to the same
// znode name. Hex digits outside ASCII (which Character.digit accepts) are
// rejected too.
func DecodeName(s string) (string, error) {
	if !strings.ContainsAny(s, "+%") {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '+':
			b.WriteByte(' ')
			i++
		case '%':
			var run []byte
			for i < len(s) && s[i] == '%' {
				if i+2 >= len(s) {
					return "", fmt.Errorf("%w: %q: incomplete trailing escape (%%) pattern", ErrInvalidName, s)
				}
				v, ok := javaHexByte(s[i+1], s[i+2])
				if !ok {
					return "", fmt.Errorf("%w: %q: illegal hex characters in escape (%%) pattern %q", ErrInvalidName, s, s[i:i+3])
				}
				run = append(run, v)
				i += 3
			}
			if !utf8.Valid(run) {
				return "", fmt.Errorf("%w: %q: escapes decode to invalid UTF-8", ErrInvalidName, s)
			}
			b.Write(run)
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

// javaHexByte mirrors Integer.parseInt(s, i+1, i+3, 16) on two characters:
// an optional sign followed by hex digits, negative values rejected.
func javaHexByte(a, b byte) (byte, bool) {
	d1, ok1 := hexVal(a)
	d2, ok2 := hexVal(b)
	switch {
	case ok1 && ok2:
		return d1<<4 | d2, true
	case a == '+' && ok2:
		return d2, true
	case a == '-' && ok2 && d2 == 0:
		return 0, true
	}
	return 0, false
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// TopicName is a parsed Pulsar topic name (TopicName.java): new style
// domain://tenant/namespace/local or legacy (v1)
// domain://tenant/cluster/namespace/local.
type TopicName struct {
	Domain    string // DomainPersistent or DomainNonPersistent
	Tenant    string
	Cluster   string // empty for new-style (v2) names
	Namespace string // the namespace portion, without tenant or cluster
	Local     string // decoded local name, including any -partition-N suffix
	// Partition is the partition index parsed from a "-partition-N" suffix
	// (N a non-negative decimal without leading zeros), or -1.
	Partition int
}

// ParseTopic parses a topic name the way Pulsar's TopicName does: full names
// ("persistent://t/ns/x", "persistent://t/cluster/ns/x"), and short ones ("x"
// is persistent://public/default/x, "t/ns/x" is persistent://t/ns/x).
func ParseTopic(name string) (TopicName, error) {
	complete := name
	if !strings.Contains(name, "://") {
		var nonEmpty int
		for _, p := range strings.Split(name, "/") {
			if p != "" {
				nonEmpty++
			}
		}
		switch nonEmpty {
		case 3:
			complete = DomainPersistent + "://" + name
		case 1:
			complete = DomainPersistent + "://public/default/" + strings.Trim(name, "/")
		default:
			return TopicName{}, fmt.Errorf("%w: short topic name %q: want <tenant>/<namespace>/<topic> or <topic>", ErrInvalidName, name)
		}
	}
	domain, rest, _ := strings.Cut(complete, "://")
	var t TopicName
	switch strings.ToLower(domain) {
	case DomainPersistent:
		t.Domain = DomainPersistent
	case DomainNonPersistent:
		t.Domain = DomainNonPersistent
	default:
		return TopicName{}, fmt.Errorf("%w: topic %q: invalid domain %q", ErrInvalidName, name, domain)
	}
	parts := strings.SplitN(rest, "/", 4)
	switch len(parts) {
	case 3:
		t.Tenant, t.Namespace, t.Local = parts[0], parts[1], parts[2]
	case 4:
		t.Tenant, t.Cluster, t.Namespace, t.Local = parts[0], parts[1], parts[2], parts[3]
		if err := checkEntity("cluster", t.Cluster); err != nil {
			return TopicName{}, fmt.Errorf("topic %q: %w", name, err)
		}
	default:
		return TopicName{}, fmt.Errorf("%w: topic %q", ErrInvalidName, name)
	}
	if err := checkEntity("tenant", t.Tenant); err != nil {
		return TopicName{}, fmt.Errorf("topic %q: %w", name, err)
	}
	if err := checkEntity("namespace", t.Namespace); err != nil {
		return TopicName{}, fmt.Errorf("topic %q: %w", name, err)
	}
	if t.Local == "" {
		return TopicName{}, fmt.Errorf("%w: topic %q: empty local name", ErrInvalidName, name)
	}
	t.Partition = partitionIndex(complete)
	return t, nil
}

// checkEntity applies NamedEntity.checkName (^[-=:.\w]*$) and rejects empty
// names, as NamespaceName does.
func checkEntity(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalidName, what)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; isWordChar(c) || c == '-' || c == '=' || c == ':' || c == '.' {
			continue
		}
		return fmt.Errorf("%w: %s %q: only a-z A-Z 0-9 _ - = : . allowed", ErrInvalidName, what, s)
	}
	return nil
}

// isWordChar reports whether c matches Java's default \w ([a-zA-Z_0-9]).
func isWordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// partitionIndex mirrors TopicName.getPartitionIndex(String).
func partitionIndex(complete string) int {
	i := strings.LastIndex(complete, partitionSuffix)
	if i < 0 {
		return -1
	}
	idx := complete[i+len(partitionSuffix):]
	n, err := strconv.ParseInt(idx, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != idx {
		return -1
	}
	return int(n)
}

// IsV2 reports whether t is a new-style name (no cluster).
func (t TopicName) IsV2() bool { return t.Cluster == "" }

// Persistent reports whether t is in the persistent domain; only those
// topics have a managed ledger.
func (t TopicName) Persistent() bool { return t.Domain == DomainPersistent }

// String returns the complete topic name (TopicName.toString()).
func (t TopicName) String() string {
	if t.IsV2() {
		return t.Domain + "://" + t.Tenant + "/" + t.Namespace + "/" + t.Local
	}
	return t.Domain + "://" + t.Tenant + "/" + t.Cluster + "/" + t.Namespace + "/" + t.Local
}

// NamespacePath returns "tenant/namespace" or, for v1 names,
// "tenant/cluster/namespace" (NamespaceName.toString()).
func (t TopicName) NamespacePath() string {
	if t.IsV2() {
		return t.Tenant + "/" + t.Namespace
	}
	return t.Tenant + "/" + t.Cluster + "/" + t.Namespace
}

// MLName returns the persistence naming encoding
// (TopicName.getPersistenceNamingEncoding()): tenant/namespace/domain/
// EncodeName(local), or tenant/cluster/namespace/domain/EncodeName(local).
// Each partition of a partitioned topic is its own managed ledger.
func (t TopicName) MLName() string {
	return t.NamespacePath() + "/" + t.Domain + "/" + EncodeName(t.Local)
}

// PartitionedTopic returns the parent topic of a partition (the name without
// its -partition-N suffix), or t itself.
func (t TopicName) PartitionedTopic() TopicName {
	if t.Partition < 0 {
		return t
	}
	p := t
	p.Local = t.Local[:strings.LastIndex(t.Local, partitionSuffix)]
	p.Partition = -1
	return p
}

// PartitionTopic returns partition i of t (TopicName.getPartition).
func (t TopicName) PartitionTopic(i int) TopicName {
	if i < 0 || strings.HasSuffix(t.Local, partitionSuffix+strconv.Itoa(i)) {
		return t
	}
	p := t
	p.Local = t.Local + partitionSuffix + strconv.Itoa(i)
	p.Partition = i
	return p
}

// MLNameForTopic parses a topic name and returns its managed-ledger name.
// Non-persistent topics have no managed ledger and are rejected.
func MLNameForTopic(topic string) (string, error) {
	t, err := ParseTopic(topic)
	if err != nil {
		return "", err
	}
	if !t.Persistent() {
		return "", fmt.Errorf("%w: %q is non-persistent and has no managed ledger", ErrInvalidName, topic)
	}
	return t.MLName(), nil
}

// ParseMLName is the inverse of TopicName.MLName
// (TopicName.fromPersistenceNamingEncoding followed by decoding the local
// name): "t/ns/persistent/x" or "t/cluster/ns/persistent/x".
func ParseMLName(ml string) (TopicName, error) {
	parts := strings.Split(ml, "/")
	var t TopicName
	var enc string
	switch len(parts) {
	case 4:
		t.Tenant, t.Namespace, t.Domain, enc = parts[0], parts[1], parts[2], parts[3]
	case 5:
		t.Tenant, t.Cluster, t.Namespace, t.Domain, enc = parts[0], parts[1], parts[2], parts[3], parts[4]
		if err := checkEntity("cluster", t.Cluster); err != nil {
			return TopicName{}, fmt.Errorf("managed ledger %q: %w", ml, err)
		}
	default:
		return TopicName{}, fmt.Errorf("%w: managed ledger %q: want tenant/namespace/persistent/topic", ErrInvalidName, ml)
	}
	if t.Domain != DomainPersistent && t.Domain != DomainNonPersistent {
		return TopicName{}, fmt.Errorf("%w: managed ledger %q: invalid domain %q", ErrInvalidName, ml, t.Domain)
	}
	if err := checkEntity("tenant", t.Tenant); err != nil {
		return TopicName{}, fmt.Errorf("managed ledger %q: %w", ml, err)
	}
	if err := checkEntity("namespace", t.Namespace); err != nil {
		return TopicName{}, fmt.Errorf("managed ledger %q: %w", ml, err)
	}
	local, err := DecodeName(enc)
	if err != nil {
		return TopicName{}, fmt.Errorf("managed ledger %q: %w", ml, err)
	}
	if local == "" {
		return TopicName{}, fmt.Errorf("%w: managed ledger %q: empty topic", ErrInvalidName, ml)
	}
	t.Local = local
	t.Partition = partitionIndex(t.String())
	return t, nil
}

// Path returns the znode path of a managed ledger: Root + "/" + ml.
func Path(ml string) string { return Root + "/" + ml }

// NameFromPath returns the managed-ledger name of a znode path under Root.
func NameFromPath(p string) (string, error) {
	ml, ok := strings.CutPrefix(p, Root+"/")
	if !ok || ml == "" {
		return "", fmt.Errorf("%w: %q is not under %s", ErrInvalidName, p, Root)
	}
	return ml, nil
}
