package upstream

import (
	"context"
	"sync/atomic"
	"time"
)

// demand is what starts and stops an on-demand server (config OnDemand): a
// wake-up that starts it, and the calls in flight and the last call's end
// that keep it running until it has been idle for its idleTimeout.
type demand struct {
	wakeup   chan struct{} // one pending wake-up; more coalesce
	inflight atomic.Int64
	lastUse  atomic.Int64 // Unix ns
}

func newDemand() *demand { return &demand{wakeup: make(chan struct{}, 1)} }

// wake asks for the server to be started; no-op if that is asked already.
func (d *demand) wake() {
	select {
	case d.wakeup <- struct{}{}:
	default:
	}
}

// await waits for a wake-up, reporting false when ctx ends first. A
// wake-up counts as a use: the server gets its idleTimeout to be called.
func (d *demand) await(ctx context.Context) bool {
	select {
	case <-d.wakeup:
		d.lastUse.Store(time.Now().UnixNano())
		return true
	case <-ctx.Done():
		return false
	}
}

// use counts a call in flight; the returned func ends it.
func (d *demand) use() func() {
	d.inflight.Add(1)
	return func() {
		d.lastUse.Store(time.Now().UnixNano())
		d.inflight.Add(-1)
	}
}

// idle reports whether no call is in flight and none ended within timeout.
func (d *demand) idle(timeout time.Duration) bool {
	return d.inflight.Load() == 0 && time.Since(time.Unix(0, d.lastUse.Load())) >= timeout
}
