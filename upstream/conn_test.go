package upstream

import (
	"errors"
	"testing"
	"time"

	"github.com/wardenmcp/warden/config"
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

// A server that cannot be reached is in backoff with the error and when it
// is tried next; once tried again the time moves on.
func TestBackoffSaysWhenItRetries(t *testing.T) {
	c := Start(&config.Server{Name: "down", URL: "http://127.0.0.1:1/mcp", Transport: config.TransportHTTP, CallTimeout: time.Second}, Options{})
	defer c.Stop()
	var st Status
	deadline := time.Now().Add(10 * time.Second)
	for st = c.Status(); st.State != StateBackoff || st.Failures < 2; st = c.Status() {
		if time.Now().After(deadline) {
			t.Fatalf("not in backoff after two failures: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st.Error == "" || !st.RetryAt.After(st.Since) || st.RetryAt.Sub(st.Since) > time.Second {
		t.Fatalf("in backoff: error %q, since %s, retry at %s; want the error and the next attempt soon after", st.Error, st.Since, st.RetryAt)
	}
}

// Between attempts the status keeps the last failure, so a look at it while
// a server is being tried again still says why it is not up; once it is,
// and on a first attempt, there is none.
func TestRetryKeepsTheLastFailure(t *testing.T) {
	k := &link{name: "s", changed: make(chan struct{})}
	k.set(StateConnecting, nil)
	k.backoff(1, time.Second, errors.New("exit status 1"))
	k.set(StateConnecting, nil)
	if k.status.State != StateConnecting || k.status.Error != "exit status 1" {
		t.Fatalf("retrying: %+v; want connecting with the last failure", k.status)
	}
	k.serving(nil)
	k.set(StateConnecting, nil)
	if k.status.Error != "" {
		t.Fatalf("connecting after a success: %+v; want no failure", k.status)
	}
}
