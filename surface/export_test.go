package surface

import (
	"testing"
	"time"
)

// Hooks for the tests of package surface_test, which run the surfaces over
// a real gateway.

// EvictUnused is evictUnused: what a new session at the limit does.
func (s *Surfaces) EvictUnused() bool { return s.evictUnused() }

// CloseIdleNow runs one round of closing idle sessions with these limits,
// as the round every quarter of the idle time does.
func (s *Surfaces) CloseIdleNow(idle, unusedIdle time.Duration) {
	for _, v := range s.allViews() {
		v.closeIdle(idle, min(idle, 30*time.Second), unusedIdle)
	}
}

// SweepSessionsAt is the sweep of the shared sessions' records as it would
// run at now.
func (s *Surfaces) SweepSessionsAt(now time.Time, idle time.Duration) { s.sweepSessions(now, idle) }

// SetRerankWait makes search_tools wait d for the client's model to
// rerank, until the test ends.
func SetRerankWait(t testing.TB, d time.Duration) {
	old := rerankWait
	rerankWait = d
	t.Cleanup(func() { rerankWait = old })
}
