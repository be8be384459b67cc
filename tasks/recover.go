package tasks

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/wardenmcp/warden/store"
)

// UnknownOutcome is the message of a task whose instance died while it
// ran.
const UnknownOutcome = "unknown outcome: the Warden instance running this task stopped before the call's outcome was known"

// Recover fails every task still working or waiting for input whose
// instance is not running, or is this instance: call it at start, before
// this instance runs tasks (its own are then from its last run). Each is
// handed to lost first, and failed with an unknown outcome
// (CodeUnknownOutcome) only once lost returned nil: the caller latches the
// server of a non-read task there, so a crash in between reports it again
// rather than never. It returns the tasks failed.
func (ts *Tasks) Recover(ctx context.Context, lost func(Task) error) ([]Task, error) {
	return ts.recoverLeft(ctx, true, lost)
}

// RecoverDead is Recover for the tasks of instances that are not running,
// this one's excepted: for any time, as other instances may die (e.g. on
// their Watch's Resync, or now and then).
func (ts *Tasks) RecoverDead(ctx context.Context, lost func(Task) error) ([]Task, error) {
	return ts.recoverLeft(ctx, false, lost)
}

// recoverLeft fails the tasks left running by instances not alive, and
// with mine by this one.
func (ts *Tasks) recoverLeft(ctx context.Context, mine bool, lost func(Task) error) ([]Task, error) {
	self := ts.st.Instance()
	var ids []string
	err := ts.st.View(ctx, func(tx store.Tx) error {
		prefix := []byte{'s', 0}
		return tx.Scan(runningBucket, prefix, false, func(k, inst []byte) error {
			if string(inst) == self && !mine {
				return nil
			}
			if string(inst) != self {
				if alive, err := tx.Alive(string(inst)); err != nil || alive {
					return err
				}
			}
			ids = append(ids, string(k[bytes.LastIndexByte(k, 0)+1:]))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("tasks: finding tasks left running: %w", err)
	}
	var failed []Task
	for _, id := range ids {
		var t Task
		err := ts.st.View(ctx, func(tx store.Tx) error {
			var err error
			t, err = getTask(tx, id)
			return err
		})
		if errors.Is(err, ErrNotFound) || t.Status.Terminal() {
			continue
		}
		if err != nil {
			return failed, err
		}
		if err := lost(t); err != nil {
			return failed, fmt.Errorf("tasks: task %s of %s/%s left running: %w", t.ID, t.Server, t.Tool, err)
		}
		t, err = ts.Fail(ctx, id, Error{Code: CodeUnknownOutcome, Message: UnknownOutcome})
		if errors.Is(err, ErrFinished) {
			continue
		}
		if err != nil {
			return failed, err
		}
		failed = append(failed, t)
	}
	return failed, nil
}

// sweepBatch bounds the tasks one transaction of Sweep removes (a var for
// the test of several transactions).
var sweepBatch = 500

// Sweep removes the finished tasks whose TTL has passed since they
// finished, and returns how many. Run it now and then (say every minute):
// the store then holds at most a TTL's worth of finished tasks.
//
// A task handed to its upstream whose TTL passed since its client last
// reached it, and whose upstream was not seen to finish it, may still run
// there, its outcome never learnt: it is handed to unfinished first, and
// removed only once unfinished returned nil (the first error is returned,
// the others swept). Only this instance's such tasks, and those of
// instances that are gone, are handed on and removed: each instance asks
// its own upstreams.
func (ts *Tasks) Sweep(ctx context.Context, unfinished func(context.Context, Task) error) (int, error) {
	now := uint64(ts.now().UnixNano())
	keep := map[string]bool{} // left for now: another instance's, or unfinished failed
	var failed error
	total := 0
	for {
		left, err := ts.expiredHanded(ctx, now, keep)
		if err != nil {
			return total, err
		}
		for _, t := range left {
			if err := unfinished(ctx, t); err != nil {
				keep[t.ID] = true
				if failed == nil {
					failed = fmt.Errorf("tasks: task %s of %s/%s, expired while its upstream ran it: %w", t.ID, t.Server, t.Tool, err)
				}
			}
		}
		n, err := ts.sweep(ctx, now, keep)
		total += n
		if err != nil {
			return total, err
		}
		if n < sweepBatch {
			return total, failed
		}
	}
}

// expiredHanded finds, among the next tasks expired by now (but those in
// keep), the unfinished ones handed to their upstream that this instance
// sweeps; those another live instance sweeps go into keep.
func (ts *Tasks) expiredHanded(ctx context.Context, now uint64, keep map[string]bool) ([]Task, error) {
	self := ts.st.Instance()
	var left []Task
	err := ts.st.View(ctx, func(tx store.Tx) error {
		seen := 0
		return tx.Scan(expiryBucket, nil, false, func(k, _ []byte) error {
			if seen == sweepBatch || !expired(k, now) {
				return store.ErrStop
			}
			id := string(k[8:])
			if keep[id] {
				return nil
			}
			seen++
			t, err := getTask(tx, id)
			if err != nil || t.Upstream == "" || t.Status.Terminal() || t.UpstreamDone {
				return nil
			}
			if t.Instance != self && t.Instance != "" {
				if alive, err := tx.Alive(t.Instance); err != nil || alive {
					keep[id] = true
					return err
				}
			}
			left = append(left, t)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("tasks: finding expired tasks: %w", err)
	}
	return left, nil
}

// expired reports whether k, a key of the expiry bucket (the time, then
// the task's id), is of a task expired by now.
func expired(k []byte, now uint64) bool { return len(k) >= 8 && binary.BigEndian.Uint64(k) <= now }

// sweep removes up to sweepBatch tasks expired by now, but those in keep,
// in one transaction.
func (ts *Tasks) sweep(ctx context.Context, now uint64, keep map[string]bool) (int, error) {
	n := 0
	err := ts.st.Update(ctx, func(tx store.Tx) error {
		n = 0
		var done [][]byte
		err := tx.Scan(expiryBucket, nil, false, func(k, _ []byte) error {
			if len(done) == sweepBatch || !expired(k, now) {
				return store.ErrStop
			}
			if !keep[string(k[8:])] {
				done = append(done, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range done {
			if err := tx.Delete(taskBucket, k[8:]); err != nil {
				return err
			}
			if err := tx.Delete(expiryBucket, k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("tasks: removing expired tasks: %w", err)
	}
	return n, nil
}
