package surface

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// A cancellation that comes before its call cancels the call, if the call
// comes within earlyFor; such cancellations are kept at most maxEarly.
func TestEarlyCancellation(t *testing.T) {
	l := newLive()
	if l.cancel("7") {
		t.Fatal("cancel reported a call that was not in flight")
	}
	ctx, cancel := context.WithCancel(context.Background())
	if !l.begin("7", cancel) || ctx.Err() == nil {
		t.Fatal("a call cancelled before it came was not cancelled")
	}
	l.end("7")

	l.cancel("8")
	l.mu.Lock()
	l.early["8"] = time.Now().Add(-earlyFor) // long ago
	l.mu.Unlock()
	ctx, cancel = context.WithCancel(context.Background())
	if !l.begin("8", cancel) || ctx.Err() != nil {
		t.Fatal("a stale cancellation cancelled a new call")
	}

	for i := range 2 * maxEarly {
		l.cancel(strconv.Itoa(100 + i))
	}
	if n := len(l.early); n > maxEarly {
		t.Fatalf("%d early cancellations kept, want at most %d", n, maxEarly)
	}
}
