package metadata

// LedgerInfo is a ledger's metadata as the commands show it (the JSON
// form of offloader ledger info and ledger list --details): the password
// is never included, only whether one is recorded.
type LedgerInfo struct {
	Ledger         int64             `json:"ledger"`
	Path           string            `json:"path"`
	FormatVersion  int               `json:"formatVersion"`
	ZNodeVersion   int32             `json:"znodeVersion"`
	State          string            `json:"state"`
	LastEntryID    int64             `json:"lastEntryId"`
	Length         int64             `json:"length"`
	EnsembleSize   int               `json:"ensembleSize"`
	WriteQuorum    int               `json:"writeQuorum"`
	AckQuorum      int               `json:"ackQuorum"`
	DigestType     string            `json:"digestType,omitempty"`
	HasPassword    bool              `json:"hasPassword"`
	Ctime          int64             `json:"ctime"`
	Ensembles      []EnsembleInfo    `json:"ensembles"`
	CustomMetadata map[string]string `json:"customMetadata,omitempty"`
}

// EnsembleInfo is one ensemble of a LedgerInfo.
type EnsembleInfo struct {
	FirstEntryID int64    `json:"firstEntryId"`
	Bookies      []string `json:"bookies"`
}

// Describe is m as a LedgerInfo, with its znode path in s's layout.
func (s *Store) Describe(m *LedgerMetadata) LedgerInfo {
	p, _ := s.LedgerPath(m.LedgerID)
	li := LedgerInfo{
		Ledger: m.LedgerID, Path: p, FormatVersion: m.FormatVersion, ZNodeVersion: m.Version, State: m.State.String(),
		LastEntryID: m.LastEntryID, Length: m.Length, EnsembleSize: m.EnsembleSize, WriteQuorum: m.WriteQuorum,
		AckQuorum: m.AckQuorum, HasPassword: m.HasPassword, Ctime: m.Ctime,
	}
	if m.HasPassword {
		li.DigestType = m.DigestType.String()
	}
	for _, seg := range m.Segments {
		li.Ensembles = append(li.Ensembles, EnsembleInfo(seg))
	}
	if len(m.CustomMetadata) > 0 {
		li.CustomMetadata = map[string]string{}
		for k, v := range m.CustomMetadata {
			li.CustomMetadata[k] = string(v)
		}
	}
	return li
}
