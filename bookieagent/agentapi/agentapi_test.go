package agentapi

import "testing"

// BookKeeper's thresholds make a ledger dir full or warn; a journal-only
// mount past the warn threshold is only high.
func TestMountState(t *testing.T) {
	ledger, journal := []DirRole{{Dir: "/j", Role: RoleJournal}, {Dir: "/l", Role: RoleLedger}}, []DirRole{{Dir: "/j", Role: RoleJournal}}
	for _, tc := range []struct {
		m    MountReport
		want string
	}{
		{MountReport{Dirs: ledger}, MountOK},
		{MountReport{Dirs: ledger, Error: "statfs"}, MountError},
		{MountReport{Dirs: ledger, AboveWarn: true, AboveThreshold: true}, MountFull},
		{MountReport{Dirs: ledger, AboveWarn: true}, MountWarn},
		{MountReport{Dirs: journal, AboveWarn: true, AboveThreshold: true}, MountHigh},
	} {
		if got := tc.m.State(); got != tc.want {
			t.Errorf("%+v: state %q, want %q", tc.m, got, tc.want)
		}
	}
}
