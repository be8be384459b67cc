package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// The operator's event stream reports server states, latches and their
// clearing, and config reloads, applied or refused (with why).
func TestEventsForOperators(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true, "callTimeout": "300ms"}})
	w.WaitReady(t, "s")
	events := w.FollowEvents(t)
	has := func(want string) func(string, json.RawMessage) bool {
		return func(_ string, data json.RawMessage) bool { return strings.Contains(string(data), want) }
	}
	on := func(server, want string) func(string, json.RawMessage) bool {
		return func(s string, data json.RawMessage) bool { return s == server && strings.Contains(string(data), want) }
	}

	cs := w.Connect(t, "/mcp/s", nil)
	wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v", "sleep_ms": 5000}) // times out
	awaitEvent(t, events, "writes", "s latched", on("s", `"latched":true`))
	if code, _, stderr := w.CLI(t, "writes", "clear", "s", "--yes"); code != 0 {
		t.Fatalf("writes clear: exit %d: %s", code, stderr)
	}
	awaitEvent(t, events, "writes", "s's latch cleared", on("s", `"latched":false`))

	other := fixture.NewServer(fixture.Options{})
	wardentest.EditConfig(t, w.ConfigPath, func(servers map[string]any) {
		servers["other"] = map[string]any{"url": other.Serve(t), "trusted": true}
	})
	awaitEvent(t, events, "config", "the reload applied", has(`"applied"`))
	awaitEvent(t, events, "server", "the added server ready", on("other", `"ready"`))

	wardentest.EditConfig(t, w.ConfigPath, func(servers map[string]any) {
		servers["broken"] = map[string]any{"trusted": true} // neither command nor url
	})
	awaitEvent(t, events, "config", "the reload applied, saying why broken was not loaded", func(_ string, data json.RawMessage) bool {
		return strings.Contains(string(data), `"applied"`) && strings.Contains(string(data), `"error.broken":"config `)
	})
	if err := os.WriteFile(w.ConfigPath, []byte(`{"mcpServers": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, events, "config", "the reload refused, saying why", func(_ string, data json.RawMessage) bool {
		return strings.Contains(string(data), `"refused"`) && strings.Contains(string(data), "invalid JSON")
	})
}

// awaitEvent waits for an event of type kind whose data satisfies match.
func awaitEvent(t *testing.T, events *wardentest.Events, kind, what string, match func(server string, data json.RawMessage) bool) {
	t.Helper()
	events.Await(t, 15*time.Second, what, func(e wardentest.Event) bool {
		if e.Name != kind {
			return false
		}
		if e.Type != kind {
			t.Fatalf("event %q carries type %q: %s", kind, e.Type, e.Raw)
		}
		return match(e.Server, e.Data)
	})
}
