package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/retry"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// NoBrokerNote is what happens without a broker admin URL.
const NoBrokerNote = "no broker admin URL: a broker that has the topic loaded keeps reading these ledgers from BookKeeper " +
	"until it reloads the topic, at the latest on its next ledger rollover (its metadata write then fails on the new " +
	"znode version and it reopens the managed ledger); unload the topic (pulsar-admin topics unload) to switch now"

// reloadAll makes the broker serve the complete ledgers of done from the
// object store: if its internalStats already say so (and force is unset),
// nothing is done; otherwise the topic is unloaded and internalStats checked
// again. force: a bookkeeperDeleted mark is to take effect before the
// BookKeeper copies go (internalStats do not show it). It returns the
// ledgers whose BookKeeper copies may now be deleted (the broker reloaded,
// or no reload and Options.TrimWithoutReload); nil when none may. A
// failure is recorded on the ledgers; their commits stand.
func (p *Pipeline) reloadAll(ctx context.Context, tr *TopicResult, done []*work, force bool) []*work {
	var ws []*work
	for _, w := range done {
		if w.lr.Err == nil {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return nil
	}
	if p.d.Broker == nil || p.o.SkipReload {
		note := NoBrokerNote
		if p.d.Broker != nil {
			note = "reload skipped (SkipReload)"
		}
		tr.Reload = ReloadResult{Note: note}
		for _, w := range ws {
			w.lr.Reload = tr.Reload
		}
		if !p.o.TrimWithoutReload {
			return nil
		}
		return ws
	}
	ids := make([]int64, len(ws))
	for i, w := range ws {
		ids[i] = w.lr.LedgerID
	}
	var rr ReloadResult
	err := p.step(ctx, ws[0].lr.LedgerRef, StepReload, nil, func() error {
		var err error
		rr, err = p.reload(ctx, tr.ML, ids, force)
		return err
	})
	tr.Reload = rr
	for _, w := range ws {
		w.lr.Reload = rr
		if err != nil {
			w.lr.Err = err
		}
	}
	if err != nil {
		return nil
	}
	reloaded := make([]*work, 0, len(ws))
	for _, w := range ws {
		lr := w.lr
		if err := p.hit(ctx, FPAfterReload, lr.LedgerRef); err != nil {
			lr.Err = &StepError{LedgerRef: lr.LedgerRef, Step: StepReload, Err: err}
			continue
		}
		reloaded = append(reloaded, w)
	}
	return reloaded
}

// reload checks (and, if needed or forced, makes) the broker's in-memory
// view of ml list the ledgers ids as offloaded.
func (p *Pipeline) reload(ctx context.Context, ml string, ids []int64, force bool) (ReloadResult, error) {
	tn, err := mledger.ParseMLName(ml)
	if err != nil {
		return ReloadResult{}, err
	}
	if !force {
		if st, err := p.d.Broker.InternalStats(ctx, tn); err == nil {
			if missing := notOffloaded(st.Ledgers, ids); len(missing) == 0 {
				return ReloadResult{Done: true, Note: "the broker already serves these ledgers from the object store"}, nil
			}
		}
	}
	start := time.Now()
	rr, err := retry.Do(ctx, reloadRetry(p, ml), func(ctx context.Context) (ReloadResult, error) {
		if err := p.d.Broker.Unload(ctx, tn); err != nil {
			return ReloadResult{Note: "unload failed: " + err.Error()}, fmt.Errorf("%w: %w", ErrReload, err)
		}
		st, err := p.d.Broker.InternalStats(ctx, tn)
		if err != nil {
			return ReloadResult{Unloaded: true, Note: "unloaded; internalStats failed: " + err.Error()}, fmt.Errorf("%w: after unload: %w", ErrReload, err)
		}
		if missing := notOffloaded(st.Ledgers, ids); len(missing) > 0 {
			return ReloadResult{Unloaded: true, Note: fmt.Sprintf("after unload the broker still reads ledgers %v from BookKeeper", missing)},
				fmt.Errorf("%w: after unload the broker's internalStats list ledgers %v as not offloaded: %w", ErrReload, missing, errStaleReload)
		}
		return ReloadResult{Done: true, Unloaded: true}, nil
	})
	if err != nil {
		return rr, err
	}
	p.log.Info("topic reloaded", "ml", ml, "ledgers", ids, "duration", time.Since(start))
	return rr, nil
}

// errStaleReload: the broker's reloaded topic still shows the old metadata
// (the unload met a reopen that had read the znode before the commit).
var errStaleReload = errors.New("stale reload")

// reloadRetry retries an unload that meets the topic while the broker is
// closing or reopening it (after a fence on the version the commit bumped):
// a 5xx, 409, 412 or 429 answer, or a reload that still shows the old
// metadata. A few attempts over a few seconds; other errors (refused
// credentials, unknown topic, no answer) are final.
func reloadRetry(p *Pipeline, ml string) retry.Policy {
	return retry.Policy{
		Attempts: 5,
		Backoff:  retry.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second},
		Retryable: func(err error) bool {
			var se *brokeradmin.StatusError
			if errors.As(err, &se) {
				return se.Status >= 500 || se.Status == 409 || se.Status == 412 || se.Status == 429
			}
			return errors.Is(err, errStaleReload)
		},
		OnRetry: func(n int, wait time.Duration, err error) {
			p.log.Info("topic reload: broker busy with the topic, again", "ml", ml, "attempt", n, "wait", wait, "err", err)
		},
	}
}

// notOffloaded returns the ids the broker lists without the offloaded flag
// (ledgers it does not list at all are not its concern).
func notOffloaded(ls []brokerLedger, ids []int64) []int64 {
	var out []int64
	for _, id := range ids {
		for _, l := range ls {
			if l.LedgerID == id && !l.Offloaded {
				out = append(out, id)
			}
		}
	}
	return out
}
