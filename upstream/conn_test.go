package upstream

import (
	"testing"
	"time"
)

// Reconnect delays double from 200ms up to 30s, each drawn from the upper
// half of its step so that servers failing together do not retry together.
func TestBackoffGrowsWithJitter(t *testing.T) {
	step := 200 * time.Millisecond
	for failures := 1; failures <= 12; failures++ {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := backoff(failures)
			if d < step/2 || d > step {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", failures, d, step/2, step)
			}
			seen[d] = true
		}
		if len(seen) < 50 {
			t.Fatalf("backoff(%d) drew only %d distinct delays in 200: no jitter", failures, len(seen))
		}
		step = min(2*step, 30*time.Second)
	}
}
