package upstream

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenmcp/warden/config"
)

// A call to a server in backoff fails at once with the last error; one to
// an idle on-demand server wakes it and waits for it.
func TestLinkWaitByState(t *testing.T) {
	var cfg atomic.Pointer[config.Server]
	cfg.Store(&config.Server{Name: "s", OnDemand: true, CallTimeout: time.Second})
	d := newDemand()
	k := newLink("s", &cfg, Options{MaxConcurrent: 1}, login{name: "s", cfg: &cfg}, d)
	if st := k.snapshot(); st.State != StateIdle {
		t.Fatalf("an on-demand server starts %s, want idle", st.State)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := k.wait(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("wait on an idle server that never starts: %v, want ErrUnavailable", err)
	}
	if !d.await(context.Background()) {
		t.Fatal("waiting on an idle server did not wake it")
	}
	k.backoff(2, time.Second, errors.New("refused"))
	err := k.do(context.Background(), nil)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a call in backoff: %v, want ErrUnavailable with the last error", err)
	}
	if st := k.snapshot(); st.Failures != 2 || st.RetryAt.IsZero() {
		t.Fatalf("in backoff: %+v, want 2 failures and when it retries", st)
	}
}
