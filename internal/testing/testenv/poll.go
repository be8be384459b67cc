package testenv

import (
	"testing"
	"time"
)

// WaitFor polls cond until it is true or fails the test after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// pollInterval is how often Poll asks: often enough not to slow a test
// down, seldom enough not to load a 2-core machine.
const pollInterval = 20 * time.Millisecond

// Poll asks cond until it is true (true) or timeout has passed (false);
// for a caller that says itself what went wrong, or runs off the test
// goroutine. The sleep is the poll's interval: cond is a state that
// nothing signals.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
	return true
}
