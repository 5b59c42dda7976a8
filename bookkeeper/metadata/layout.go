package metadata

import (
	"fmt"
	"strconv"
	"strings"
)

// Manager is a BookKeeper ledger manager: it decides the znode path of a
// ledger id. The zero value means "not set" in options.
type Manager int

// Ledger managers with a ZooKeeper path scheme.
const (
	// ManagerUnset means "read it from LAYOUT" in StoreOptions.
	ManagerUnset Manager = iota
	// Hierarchical is BookKeeper's default manager (and the only scheme of
	// Pulsar's metadata-store driver): short form below 2147483647, long
	// form above.
	Hierarchical
	// LongHierarchical always uses the long (3-4-4-4-4) form.
	LongHierarchical
	// LegacyHierarchical always uses the short (2-4-4) form (31-bit ids).
	LegacyHierarchical
	// Flat stores every ledger directly under the root (legacy).
	Flat
)

// String returns the manager's BookKeeper type name.
func (m Manager) String() string {
	switch m {
	case Hierarchical:
		return "hierarchical"
	case LongHierarchical:
		return "longhierarchical"
	case LegacyHierarchical:
		return "legacyhierarchical"
	case Flat:
		return "flat"
	default:
		return fmt.Sprintf("Manager(%d)", int(m))
	}
}

// ParseManager parses a manager type name (hierarchical, longhierarchical,
// legacyhierarchical, flat) or a manager factory class name as written in
// LAYOUT, with or without a shading prefix.
func ParseManager(s string) (Manager, error) {
	name := strings.TrimSpace(s)
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	switch strings.ToLower(name) {
	case "hierarchical", "hierarchicalledgermanagerfactory", "pulsarledgermanagerfactory":
		return Hierarchical, nil
	case "longhierarchical", "longhierarchicalledgermanagerfactory":
		return LongHierarchical, nil
	case "legacyhierarchical", "legacyhierarchicalledgermanagerfactory":
		return LegacyHierarchical, nil
	case "flat", "flatledgermanagerfactory":
		return Flat, nil
	}
	return ManagerUnset, fmt.Errorf("%w: ledger manager %q", ErrBadLayout, s)
}

// Layout is the parsed content of the <root>/LAYOUT znode.
type Layout struct {
	// FormatVersion is the layout format version (1 or 2).
	FormatVersion int
	// ManagerFactory is the manager as written: a class name (version 2) or
	// a type name (version 1).
	ManagerFactory string
	// ManagerVersion is the manager's version (1 for every ZooKeeper manager).
	ManagerVersion int
	// Manager is the path scheme ManagerFactory stands for.
	Manager Manager
}

// ParseLayout parses LAYOUT znode data: "<version>\n<factory>:<managerVersion>".
func ParseLayout(data []byte) (Layout, error) {
	lines := strings.Split(string(data), "\n")
	v, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil {
		return Layout{}, fmt.Errorf("%w: format version %q", ErrBadLayout, lines[0])
	}
	if v < 1 || v > 2 {
		return Layout{}, fmt.Errorf("%w: layout format version %d not in 1..2", ErrBadLayout, v)
	}
	if len(lines) < 2 {
		return Layout{}, fmt.Errorf("%w: manager missing in %q", ErrBadLayout, data)
	}
	parts := strings.Split(strings.TrimSpace(lines[1]), ":")
	if len(parts) != 2 {
		return Layout{}, fmt.Errorf("%w: manager %q is not <factory>:<version>", ErrBadLayout, lines[1])
	}
	mv, err := strconv.Atoi(parts[1])
	if err != nil {
		return Layout{}, fmt.Errorf("%w: manager version %q", ErrBadLayout, parts[1])
	}
	m, err := ParseManager(parts[0])
	if err != nil {
		return Layout{}, err
	}
	return Layout{FormatVersion: v, ManagerFactory: parts[0], ManagerVersion: mv, Manager: m}, nil
}

// maxShortID is the first id the hierarchical manager stores in long form
// (Integer.MAX_VALUE: the short form is used when id < 2147483647).
const maxShortID = 2147483647

// LedgerPath returns the znode path of ledger id under root for manager m.
func (m Manager) LedgerPath(root string, id int64) (string, error) {
	if id < 0 {
		return "", fmt.Errorf("%w: %d", ErrInvalidID, id)
	}
	root = strings.TrimRight(root, "/")
	switch m {
	case Hierarchical:
		if id < maxShortID {
			return root + shortPath(id), nil
		}
		return root + longPath(id), nil
	case LongHierarchical:
		return root + longPath(id), nil
	case LegacyHierarchical:
		if id > 9999999999 {
			return "", fmt.Errorf("%w: %d does not fit the legacy hierarchical layout", ErrInvalidID, id)
		}
		return root + shortPath(id), nil
	case Flat:
		return fmt.Sprintf("%s/L%010d", root, id), nil
	}
	return "", fmt.Errorf("%w: manager %v", ErrBadLayout, m)
}

// shortPath is /d0d1/d2d3d4d5/Ld6d7d8d9 of the 10-digit id.
func shortPath(id int64) string {
	s := fmt.Sprintf("%010d", id)
	return "/" + s[0:2] + "/" + s[2:6] + "/L" + s[6:10]
}

// longPath is /ddd/dddd/dddd/dddd/Ldddd of the 19-digit id.
func longPath(id int64) string {
	s := fmt.Sprintf("%019d", id)
	return "/" + s[0:3] + "/" + s[3:7] + "/" + s[7:11] + "/" + s[11:15] + "/L" + s[15:19]
}

// isDigits reports whether s is exactly n ASCII digits.
func isDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// leafDigits returns the digits of a leaf node "L" + n digits.
func leafDigits(s string, n int) (string, bool) {
	if len(s) != n+1 || s[0] != 'L' || !isDigits(s[1:], n) {
		return "", false
	}
	return s[1:], true
}
