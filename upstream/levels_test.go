package upstream

import (
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
