package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/writes"
)

// writeAdmission is a non-read call's way through the writes ledger, as its
// package doc lays it out: admit is the call's upstream.Call.Admit, run
// right before the request leaves (the permit it takes is released at the
// dispatch boundary, never held across the wait for the answer); latch
// records an unknown outcome after that; end strikes the intent off once
// the outcome is known.
type writeAdmission struct {
	ctx        context.Context // the call's
	ledger     *writes.Ledger
	call       Call
	entry      *activity.Entry
	recordArgs bool

	pending writes.Latch   // the call as its latch would read, written down before it was sent
	intent  *writes.Intent // nil until written down
}

// admit gates the call and writes it down first, so that Warden dying
// mid-call still latches the server when it starts again.
func (w *writeAdmission) admit() (release func(), err error) {
	permit, latch := w.ledger.Admit(w.call.Server)
	if latch != nil {
		return nil, latchedRefusal(latch)
	}
	w.entry.ArgsSHA256 = canon.ArgsSHA256(w.call.Args) // (the activity log's too)
	w.pending = latchOf(w.call, w.entry.ArgsSHA256, w.recordArgs)
	in, err := w.ledger.Begin(w.ctx, w.pending)
	var latched *writes.LatchedError
	switch {
	case errors.As(err, &latched): // by another instance, or a call of one that died
		return permit.Release, latchedRefusal(&latched.Latch)
	case errors.Is(err, store.ErrUnavailable):
		return permit.Release, storeUnavailable()
	case err != nil:
		return permit.Release, refuse(CodeUnavailable, "Warden could not write the call down before sending it (%v), so it did not send it. Check the store (the disk holding the state dir, or the database the \"store\" setting names), then retry.", err)
	}
	w.intent = in
	return permit.Release, nil
}

// latch records the call's unknown outcome (never while holding the
// permit: the call has passed its dispatch boundary); its intent goes with
// the latch's commit, or, not stored, stays: the server latches at the
// next start.
func (w *writeAdmission) latch(reason writes.Reason) error {
	w.pending.At, w.pending.Reason = time.Now(), reason
	return w.ledger.Record(w.pending, w.intent) // (End then leaves the intent to the latch)
}

// end strikes the intent off: the outcome is known (or latched). A nil
// admission (a read call's) has none.
func (w *writeAdmission) end() {
	if w != nil {
		w.intent.End()
	}
}

// latchOf is a non-read call as its latch would read, sent now: the
// arguments' values are kept only when the tool's config says recordArgs.
func latchOf(call Call, argsSHA256 string, recordArgs bool) writes.Latch {
	lt := writes.Latch{Server: call.Server, Tool: call.Tool, ArgsSHA256: argsSHA256, Surface: call.Surface,
		SentAt: time.Now(), Client: call.Caller}
	lt.Args, lt.ArgsOmitted = writes.DescribeArgs(call.Args, recordArgs)
	return lt
}
