package format

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Object user metadata keys, lower-case as Pulsar writes and reads them
// (DataBlockUtils.addVersionInfo lower-cases the version key; the broker
// lower-cases the software keys; S3 returns every key lower-case).
const (
	// MetaFormatVersion must be FormatVersion on both objects; Pulsar checks
	// it on the index GET and on every ranged GET of the data object.
	MetaFormatVersion = "s3managedledgeroffloaderformatversion"
	// FormatVersion is DataBlockUtils.CURRENT_VERSION.
	FormatVersion = "1"
	// MetaSoftwareVersion and MetaSoftwareGitSha are informational: the
	// broker puts its Pulsar version and git sha there.
	MetaSoftwareVersion = "s3managedledgeroffloadersoftwareversion"
	MetaSoftwareGitSha  = "s3managedledgeroffloadersoftwaregitsha"
	// MetaRole is "data" or "index" (brokers >= 2.10).
	MetaRole  = "role"
	RoleData  = "data"
	RoleIndex = "index"
	// MetaManagedLedgerName carries the managed-ledger name the broker passes
	// as extra metadata ("ManagedLedgerName", lower-cased by the store).
	MetaManagedLedgerName = "managedledgername"
	// MetaPulsarClusterName is the broker's cluster name
	// (LedgerOffloader.METADATA_PULSAR_CLUSTER_NAME lower-cased; seen on
	// objects written by Pulsar 4.0.8).
	MetaPulsarClusterName = "pulsarclustername"
)

// DataKey is the data object's key: "<uuid>-ledger-<ledgerId>"
// (DataBlockUtils.dataBlockOffloadKey). The UUID prints as Java's
// UUID.toString: 36 lower-case characters.
func DataKey(id uuid.UUID, ledgerID int64) string {
	return id.String() + "-ledger-" + strconv.FormatInt(ledgerID, 10)
}

// IndexKey is the index object's key: "<uuid>-ledger-<ledgerId>-index".
func IndexKey(id uuid.UUID, ledgerID int64) string {
	return DataKey(id, ledgerID) + "-index"
}

// ParseKey splits an offload object key into its UUID and ledger id and
// tells whether it names the index.
func ParseKey(key string) (id uuid.UUID, ledgerID int64, index bool, err error) {
	rest, index := strings.CutSuffix(key, "-index")
	u, num, ok := strings.Cut(rest, "-ledger-")
	if !ok || len(u) != 36 {
		return uuid.UUID{}, 0, false, fmt.Errorf("%w: %q", ErrInvalidKey, blob.Clip(key))
	}
	id, err = uuid.Parse(u)
	if err != nil || id.String() != u {
		return uuid.UUID{}, 0, false, fmt.Errorf("%w: %q: bad uuid", ErrInvalidKey, blob.Clip(key))
	}
	ledgerID, err = strconv.ParseInt(num, 10, 64)
	if err != nil || ledgerID < 0 || strconv.FormatInt(ledgerID, 10) != num {
		return uuid.UUID{}, 0, false, fmt.Errorf("%w: %q: bad ledger id", ErrInvalidKey, blob.Clip(key))
	}
	return id, ledgerID, index, nil
}

// ObjectInfo is the informational user metadata stored with both objects.
type ObjectInfo struct {
	// SoftwareVersion and SoftwareGitSha fill the two software keys; empty
	// values are left out.
	SoftwareVersion string
	SoftwareGitSha  string
	// ManagedLedgerName is the managed-ledger name (e.g.
	// "public/default/persistent/t1"); empty leaves the key out.
	ManagedLedgerName string
	// ClusterName is the Pulsar cluster name; empty leaves the key out.
	ClusterName string
	// Extra holds further keys (lower-cased when stored); they cannot
	// override the format version.
	Extra map[string]string
}

// Metadata returns the user metadata for the object with the given role, in
// Pulsar's precedence: software keys and cluster name (the broker's user
// metadata), role, extra metadata (managed-ledger name, Extra), format
// version.
func (o ObjectInfo) Metadata(role string) map[string]string {
	m := make(map[string]string, 5+len(o.Extra))
	if o.SoftwareVersion != "" {
		m[MetaSoftwareVersion] = o.SoftwareVersion
	}
	if o.SoftwareGitSha != "" {
		m[MetaSoftwareGitSha] = o.SoftwareGitSha
	}
	if o.ClusterName != "" {
		m[MetaPulsarClusterName] = o.ClusterName
	}
	m[MetaRole] = role
	if o.ManagedLedgerName != "" {
		m[MetaManagedLedgerName] = o.ManagedLedgerName
	}
	for k, v := range o.Extra {
		m[strings.ToLower(k)] = v
	}
	m[MetaFormatVersion] = FormatVersion
	return m
}

// CheckVersion applies Pulsar's VERSION_CHECK to an object's user metadata:
// the format version key must be present and equal FormatVersion. Stores
// return lower-case keys; another spelling is accepted as jclouds does,
// unless two spellings disagree (the answer would depend on map order).
func CheckVersion(key string, metadata map[string]string) error {
	v, ok := metadata[MetaFormatVersion]
	if !ok {
		for k, val := range metadata {
			if !strings.EqualFold(k, MetaFormatVersion) {
				continue
			}
			if ok && val != v {
				return fmt.Errorf("%w: %s has conflicting %s metadata", ErrFormatVersion, key, MetaFormatVersion)
			}
			v, ok = val, true
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s has no %s metadata", ErrFormatVersion, key, MetaFormatVersion)
	}
	if v != FormatVersion {
		return fmt.Errorf("%w: %s has %s=%q, want %q", ErrFormatVersion, key, MetaFormatVersion, blob.Clip(v), FormatVersion)
	}
	return nil
}
