package upstream

import (
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/protocol"
)

// The upstream's level only gets more verbose: a client asking for less
// does not change it.
func TestLevelsOnlyMoreVerbose(t *testing.T) {
	var l levels
	if l.get() != "" {
		t.Fatalf("a level before any was asked: %q", l.get())
	}
	for _, step := range []struct {
		ask     mcp.LoggingLevel
		changed bool
		want    mcp.LoggingLevel
	}{
		{"warning", true, "warning"},
		{"error", false, "warning"},
		{"info", true, "info"},
		{"info", false, "info"},
		{"debug", true, "debug"},
		{"emergency", false, "debug"},
	} {
		if got := l.ask(step.ask); got != step.changed {
			t.Fatalf("ask(%q) reported %v, want %v", step.ask, got, step.changed)
		}
		if l.get() != step.want {
			t.Fatalf("after ask(%q) the level is %q, want %q", step.ask, l.get(), step.want)
		}
	}
}

// Clients set their levels concurrently; whatever the order, the most
// verbose asked wins, and -race fails if the level is unguarded.
func TestLevelsConcurrent(t *testing.T) {
	var l levels
	var wg sync.WaitGroup
	for level := range protocol.LevelRank {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				l.ask(level)
				_ = l.get()
			}
		}()
	}
	wg.Wait()
	if l.get() != "debug" {
		t.Fatalf("the level is %q after every level was asked, want debug", l.get())
	}
}

// While clients may not hear from the server, a level asked is kept but
// neither told to calls nor set on a session; once they may, it is.
func TestLevelsWaitForExposure(t *testing.T) {
	exposed := false
	l := levels{exposed: func() bool { return exposed }, live: func() *mcp.ClientSession { return nil }}
	if err := l.set(context.Background(), "info"); err != nil {
		t.Fatal(err)
	}
	if got := l.forCalls(); got != "" {
		t.Fatalf("calls are told %q while clients may not hear from the server", got)
	}
	exposed = true
	if got := l.forCalls(); got != "info" {
		t.Fatalf("calls are told %q once exposed, want info", got)
	}
}
