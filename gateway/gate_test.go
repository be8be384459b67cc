package gateway

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Shutting the gate waits for the calls in it, cancels those still running
// after the grace period, and admits none after.
func TestCallGate(t *testing.T) {
	g := newCallGate()
	quick, leaveQuick, ok := g.enter(context.Background())
	if !ok {
		t.Fatal("a call was refused before the gate shut")
	}
	slow, leaveSlow, _ := g.enter(context.Background())
	var wg sync.WaitGroup
	wg.Go(leaveQuick)
	wg.Go(func() { <-slow.Done(); leaveSlow() }) // ends only when cancelled
	g.shut(50 * time.Millisecond)
	wg.Wait()
	if quick.Err() == nil || slow.Err() == nil {
		t.Errorf("after the gate shut: quick %v, slow %v; want both contexts ended", quick.Err(), slow.Err())
	}
	if _, _, ok := g.enter(context.Background()); ok {
		t.Error("a call was admitted after the gate shut")
	}
}
