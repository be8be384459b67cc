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
	g := &callGate{}
	g.stopping, g.stop = context.WithCancel(context.Background())
	return g
}

// enter admits a call: its context, cancelled if the gate is shut before
// the call ends, and leave, which ends it. ok is false once the gate is
// shut.
func (g *callGate) enter(ctx context.Context) (_ context.Context, leave func(), ok bool) {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return ctx, nil, false
	}
	g.calls.Add(1)
	g.mu.RUnlock()
	ctx, cancel := context.WithCancel(ctx)
	unlink := context.AfterFunc(g.stopping, cancel)
	return ctx, func() { unlink(); cancel(); g.calls.Done() }, true
}

// shut admits no more calls and returns when those in flight have ended,
// cancelling them after grace.
func (g *callGate) shut(grace time.Duration) {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	done := make(chan struct{})
	go func() { g.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		g.stop()
		<-done
	}
	g.stop()
}
