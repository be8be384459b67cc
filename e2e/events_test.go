package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/fixture"
	"github.com/wardenmcp/warden/internal/wardentest"
)

// sse is one event of GET /v1/events.
type sse struct{ event, data string }

// subscribeEvents opens GET /v1/events; the channel closes when the stream
// ends. The stream is closed at the end of the test.
func subscribeEvents(t *testing.T, w *wardentest.Warden) <-chan sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", w.URL("/v1/events"), nil)
	req.Header.Set("Authorization", "Bearer "+w.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /v1/events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan sse, 1000)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				cur.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				cur.data += strings.TrimPrefix(line, "data: ")
			case line == "":
				if cur.event != "" {
					events <- cur
				}
				cur = sse{}
			}
		}
	}()
	return events
}

// awaitEvent waits for an event of type kind whose data satisfies match.
func awaitEvent(t *testing.T, events <-chan sse, kind, what string, match func(server string, data json.RawMessage) bool) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("the event stream ended before %s", what)
			}
			if e.event != kind {
				continue
			}
			var ev struct {
				Type, Server string
				Data         json.RawMessage
			}
			if err := json.Unmarshal([]byte(e.data), &ev); err != nil {
				t.Fatalf("%s event data %q: %v", kind, e.data, err)
			}
			if ev.Type != kind {
				t.Fatalf("event %q carries type %q", kind, ev.Type)
			}
			if match(ev.Server, ev.Data) {
				return
			}
		case <-deadline:
			t.Fatalf("no event within 15s: %s", what)
		}
	}
}

// The operator's event stream reports server states, latches and their
// clearing, and config reloads, applied or refused (with why).
func TestEventsForOperators(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true, "callTimeout": "300ms"}})
	w.WaitReady(t, "s")
	events := subscribeEvents(t, w)
	has := func(want string) func(string, json.RawMessage) bool {
		return func(_ string, data json.RawMessage) bool { return strings.Contains(string(data), want) }
	}
	on := func(server, want string) func(string, json.RawMessage) bool {
		return func(s string, data json.RawMessage) bool { return s == server && strings.Contains(string(data), want) }
	}

	cs := w.Connect(t, "/mcp/s", nil)
	wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v", "sleep_ms": 5000}) // times out
	awaitEvent(t, events, "writes", "s latched", on("s", `"latched":true`))
	if code, _, stderr := apCLI(t, w, "writes", "clear", "s"); code != 0 {
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
