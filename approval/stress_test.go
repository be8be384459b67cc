package approval

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A fresh trusted server with 320 tools, under concurrent reloads,
// reconnects and list_changed storms whose inventories arrive out of order,
// with Checks running throughout: 320 of 320 approved every time, and after
// a restart. No Check may ever see a held status.
func TestFreshTrustedServerUnderConcurrency(t *testing.T) {
	const rounds, tools = 20, 320
	var staleTotal atomic.Int64
	for round := range rounds {
		ts := newStore(t)
		r := ts.r
		inv := inventory(tools, "read_customer_record")
		toolNames := names(inv)
		hashes := make([]string, tools)
		for i, tl := range inv {
			hashes[i] = must[string](t)(Hash(tl))
		}
		must[error](t)(nil, r.EnsureServer("big", true))

		var seq atomic.Uint64
		var held, quarantined atomic.Int64
		pass := func(reload bool, delay time.Duration) {
			if reload {
				if err := r.EnsureServer("big", true); err != nil {
					t.Error(err)
				}
			}
			n := seq.Add(1)   // taken before the fetch
			time.Sleep(delay) // the fetch: inventories arrive out of order
			res, err := r.Apply("big", true, n, inv)
			if err != nil {
				t.Error(err)
			}
			if res.Stale {
				staleTotal.Add(1)
			}
		}
		stop := make(chan struct{})
		var checkers sync.WaitGroup
		for c := range 2 {
			checkers.Add(1)
			go func() {
				defer checkers.Done()
				for i := c; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if st, known := r.Check("big", toolNames[i%tools], hashes[i%tools]); known && st != StatusApproved {
						held.Add(1)
					}
					if r.Quarantined("big") {
						quarantined.Add(1)
					}
				}
			}()
		}
		var wg sync.WaitGroup
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		for i := range 40 {
			delay := time.Duration(rng.IntN(2000)) * time.Microsecond
			reload := i%10 == 0 // every tenth is a config reload; the rest reconnects and list_changed
			wg.Go(func() { pass(reload, delay) })
		}
		wg.Wait()
		close(stop)
		checkers.Wait()
		if held.Load() != 0 || quarantined.Load() != 0 {
			t.Fatalf("round %d: Check saw a held tool %d times, a quarantined server %d times", round, held.Load(), quarantined.Load())
		}
		verify := func(r *Registry, when string) {
			t.Helper()
			c := statusCount(r, "big")
			if c[StatusApproved] != tools || len(c) != 1 {
				t.Fatalf("round %d %s: %v", round, when, c)
			}
			for _, name := range toolNames {
				if st, known := check(r, "big", name); st != StatusApproved || !known {
					t.Fatalf("round %d %s: %s is %s", round, when, name, st)
				}
			}
			if st, _ := r.Server("big"); st.Quarantined || !st.Baselined {
				t.Fatalf("round %d %s: %+v", round, when, st)
			}
		}
		verify(r, "after the storm")
		r = ts.reopen()
		verify(r, "after restart")
		if res := must[ApplyResult](t)(r.Apply("big", true, 1, inv)); res.Stale || res.Written != 0 {
			t.Fatalf("round %d: first pass after restart %+v", round, res)
		}
		verify(r, "after reconnect")
	}
	t.Logf("%d stale passes refused across %d rounds", staleTotal.Load(), rounds)
}
