package gateway

import (
	"context"
	"sync"
	"time"
)

// callGate admits calls while the gateway runs. Shutting it lets no more
// in and gives the calls in flight a grace period to finish; the rest are
// cancelled, so a write among them is recorded as an unknown outcome
// before the store closes.
type callGate struct {
	mu       sync.RWMutex
	closed   bool
	calls    sync.WaitGroup
	stopping context.Context // cancelled when the grace period is over
	stop     context.CancelFunc
}

func newCallGate() *callGate {
	cg := &callGate{}
	cg.stopping, cg.stop = context.WithCancel(context.Background())
	return cg
}

// enter admits a call: its context, cancelled if the gate is shut before
// the call ends, and leave, which ends it. ok is false once the gate is
// shut.
func (cg *callGate) enter(ctx context.Context) (_ context.Context, leave func(), ok bool) {
	cg.mu.RLock()
	if cg.closed {
		cg.mu.RUnlock()
		return ctx, nil, false
	}
	cg.calls.Add(1)
	cg.mu.RUnlock()
	ctx, cancel := context.WithCancel(ctx)
	unlink := context.AfterFunc(cg.stopping, cancel)
	return ctx, func() { unlink(); cancel(); cg.calls.Done() }, true
}

// shut admits no more calls and returns when those in flight have ended,
// cancelling them after grace.
func (cg *callGate) shut(grace time.Duration) {
	cg.mu.Lock()
	cg.closed = true
	cg.mu.Unlock()
	done := make(chan struct{})
	go func() { cg.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		cg.stop()
		<-done
	}
	cg.stop()
}
