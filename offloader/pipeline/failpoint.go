package pipeline

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Failpoint names, in the order a ledger meets them.
const (
	FPAfterSelect      = "after-select"       // eligible; nothing written yet
	FPAfterPrepare     = "after-prepare"      // attempt UUID recorded, no object yet
	FPMidCopy          = "mid-copy"           // half the entries handed to the upload
	FPAfterCopy        = "after-copy"         // objects written, not verified
	FPAfterVerify      = "after-verify"       // verified, not committed
	FPAfterCommit      = "after-commit"       // complete=true stored
	FPAfterReload      = "after-reload"       // broker serves the ledger from the store
	FPAfterMarkDeleted = "after-mark-deleted" // bookkeeperDeleted=true stored
	FPAfterTrim        = "after-trim"         // BookKeeper ledger deleted
)

// FailpointNames lists every failpoint.
var FailpointNames = []string{FPAfterSelect, FPAfterPrepare, FPMidCopy, FPAfterCopy, FPAfterVerify,
	FPAfterCommit, FPAfterReload, FPAfterMarkDeleted, FPAfterTrim}

// Failpoints is called at every failpoint; a non-nil error stops the
// ledger's pipeline there as if the step had failed. Tests implement it
// directly; ParseFailpoints builds one from a text spec.
type Failpoints interface {
	Hit(ctx context.Context, name string, t mledger.LedgerRef) error
}

// FailpointFunc adapts a function to Failpoints.
type FailpointFunc func(ctx context.Context, name string, t mledger.LedgerRef) error

// Hit calls f.
func (f FailpointFunc) Hit(ctx context.Context, name string, t mledger.LedgerRef) error {
	return f(ctx, name, t)
}

// FailpointEnv is the environment variable the offloader command reads a
// failpoint spec from (see ParseFailpoints).
const FailpointEnv = "TIERKEEPER_FAILPOINTS"

// FailpointsFromEnv parses $TIERKEEPER_FAILPOINTS (ParseFailpoints); nil
// (no failpoints) when it is unset or empty.
func FailpointsFromEnv() (Failpoints, error) {
	fs, err := ParseFailpoints(os.Getenv(FailpointEnv))
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", FailpointEnv, err)
	}
	if fs == nil {
		return nil, nil
	}
	return fs, nil
}

// FailpointSet is a parsed failpoint spec. Safe for concurrent use.
type FailpointSet struct {
	mu    sync.Mutex
	rules []fpRule
	kill  func() // default: SIGKILL this process
}

type fpRule struct {
	name   string
	nth    int // fire on the nth hit (1-based); 0: every hit
	hits   int
	action string // error, kill, sleep
	sleep  time.Duration
}

// ParseFailpoints parses "name[@N]=action[,name[@N]=action...]" where
// action is "error" (the step fails with ErrFailpoint), "kill" (the
// process SIGKILLs itself: a crash at exactly that point) or "sleep:DUR"
// (e.g. sleep:2s, to widen a window for an outside kill). @N fires on the
// Nth time the failpoint is reached (counting every ledger), else on every
// hit. An empty spec gives nil (no failpoints).
func ParseFailpoints(spec string) (*FailpointSet, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	fs := &FailpointSet{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		key, action, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("failpoint %q: want name[@N]=action", item)
		}
		r := fpRule{action: action}
		name, nth, hasN := strings.Cut(key, "@")
		r.name = name
		if !slices.Contains(FailpointNames, name) {
			return nil, fmt.Errorf("failpoint %q: unknown name (known: %s)", name, strings.Join(FailpointNames, ", "))
		}
		if hasN {
			n, err := strconv.Atoi(nth)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("failpoint %q: @%s is not a positive count", item, nth)
			}
			r.nth = n
		}
		switch {
		case action == "error", action == "kill":
		case strings.HasPrefix(action, "sleep:"):
			d, err := time.ParseDuration(strings.TrimPrefix(action, "sleep:"))
			if err != nil || d < 0 {
				return nil, fmt.Errorf("failpoint %q: bad sleep duration", item)
			}
			r.action, r.sleep = "sleep", d
		default:
			return nil, fmt.Errorf("failpoint %q: action must be error, kill or sleep:DURATION", item)
		}
		fs.rules = append(fs.rules, r)
	}
	return fs, nil
}

// Hit implements Failpoints.
func (fs *FailpointSet) Hit(ctx context.Context, name string, t mledger.LedgerRef) error {
	if fs == nil {
		return nil
	}
	fs.mu.Lock()
	var fire []fpRule
	for i := range fs.rules {
		r := &fs.rules[i]
		if r.name != name {
			continue
		}
		r.hits++
		if r.nth == 0 || r.nth == r.hits {
			fire = append(fire, *r)
		}
	}
	kill := fs.kill
	fs.mu.Unlock()
	for _, r := range fire {
		switch r.action {
		case "error":
			return fmt.Errorf("%w %s (ledger %d of %s)", ErrFailpoint, name, t.LedgerID, t.ML)
		case "kill":
			if kill != nil {
				kill()
				return fmt.Errorf("%w %s: killed", ErrFailpoint, name)
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		case "sleep":
			tm := time.NewTimer(r.sleep)
			select {
			case <-tm.C:
			case <-ctx.Done():
				tm.Stop()
				return ctx.Err()
			}
		}
	}
	return nil
}
