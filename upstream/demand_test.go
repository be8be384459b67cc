package upstream

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Wake-ups coalesce: however many calls ask for a stopped server, it is
// started once; waiting without a wake-up ends with the connection.
func TestDemandWakeCoalesces(t *testing.T) {
	d := newDemand()
	d.wake()
	d.wake()
	if !d.await(context.Background()) {
		t.Fatal("a pending wake-up was not seen")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d.await(ctx) {
		t.Fatal("a second wake-up was pending: wake-ups did not coalesce")
	}
}

// A server is idle when no call is in flight and the last use ended at
// least idleTimeout ago; being woken counts as a use.
func TestDemandIdle(t *testing.T) {
	d := newDemand()
	if !d.idle(time.Hour) {
		t.Fatal("a server never used is not idle")
	}
	end := d.use()
	if d.idle(0) {
		t.Fatal("idle with a call in flight")
	}
	end()
	if !d.idle(0) {
		t.Fatal("not idle with no call in flight and no timeout")
	}
	if d.idle(time.Hour) {
		t.Fatal("idle right after a call ended, with an hour's timeout")
	}

	d = newDemand()
	d.wake()
	d.await(context.Background())
	if d.idle(time.Hour) {
		t.Fatal("idle right after being woken, with an hour's timeout")
	}
}

// Calls begin and end while the supervisor checks for idleness; every
// ended call leaves the count where it was.
func TestDemandConcurrentUse(t *testing.T) {
	d := newDemand()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range 200 {
				d.use()()
			}
		}()
		go func() {
			defer wg.Done()
			for range 200 {
				d.idle(time.Millisecond)
				d.wake()
			}
		}()
	}
	wg.Wait()
	if d.inflight.Load() != 0 {
		t.Fatalf("%d calls counted in flight after all ended", d.inflight.Load())
	}
}
