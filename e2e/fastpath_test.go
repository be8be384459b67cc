package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// Warden's own handling of a plain tools/call (surface/fast.go) must keep
// every rule the SDK's handler keeps for other requests. These tests speak
// raw HTTP, as a careless or hostile client would.

// fpSession is a raw client session on one endpoint.
type fpSession struct {
	t       *testing.T
	url, id string
}

func fpOpen(t *testing.T, w *wardentest.Warden, path string) *fpSession {
	t.Helper()
	return fpOpenWith(t, w, path, `{}`, fixture.ToolWrite)
}

// fpOpenWith opens a session declaring capabilities (JSON), once tool is
// listed.
func fpOpenWith(t *testing.T, w *wardentest.Warden, path, capabilities, tool string) *fpSession {
	t.Helper()
	s := &fpSession{t: t, url: w.URL(path)}
	s.initialize(capabilities)
	wardentest.WaitFor(t, 20*time.Second, "the tools listed", func() bool {
		_, body, _ := s.send("POST", `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`, nil)
		return strings.Contains(body, tool)
	})
	return s
}

// initialize begins a 2025-11-25 session declaring capabilities (JSON).
func (s *fpSession) initialize(capabilities string) {
	s.t.Helper()
	code, _, hdr := s.send("POST", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+capabilities+`,"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if code != http.StatusOK {
		s.t.Fatalf("initialize: %d", code)
	}
	s.id = hdr.Get("Mcp-Session-Id")
	if code, body, _ := s.send("POST", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); code != http.StatusAccepted {
		s.t.Fatalf("initialized: %d %s", code, body)
	}
}

// send posts body with the usual headers, changed by extra ("" removes one).
func (s *fpSession) send(method, body string, extra map[string]string) (int, string, http.Header) {
	return s.sendCtx(context.Background(), method, body, extra)
}

func (s *fpSession) sendCtx(ctx context.Context, method, body string, extra map[string]string) (int, string, http.Header) {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, s.url, strings.NewReader(body))
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": s.id}
	for k, v := range extra {
		h[k] = v
	}
	for k, v := range h {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, "", nil
		}
		s.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// A tools/call whose headers or envelope the SDK's handler refuses is
// refused the same way, and never reaches the upstream; the variants it
// accepts are served.
func TestFastPathKeepsTheTransportRules(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}})
	s := fpOpen(t, w, "/mcp/s")
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`
	}
	for _, c := range []struct {
		name  string
		body  string
		extra map[string]string
	}{
		{"Accept JSON only", call("1"), map[string]string{"Accept": "application/json"}},
		{"Accept event stream only", call("1"), map[string]string{"Accept": "text/event-stream"}},
		{"no Accept", call("1"), map[string]string{"Accept": ""}},
		{"Content-Type text/plain", call("1"), map[string]string{"Content-Type": "text/plain"}},
		{"unknown protocol version", call("1"), map[string]string{"Mcp-Protocol-Version": "1999-01-01"}},
		{"older protocol version", call("1"), map[string]string{"Mcp-Protocol-Version": "2024-11-05"}},
		{"Last-Event-ID on a POST", call("1"), map[string]string{"Last-Event-ID": "x_1"}},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, nil},
		{"id null", call("null"), nil},
		{"id object", call(`{"x":1}`), nil},
		{"id true", call("true"), nil},
	} {
		before := f.Calls(fixture.ToolEcho)
		code, body, _ := s.send("POST", c.body, c.extra)
		if code < 400 && !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %q, want it refused", c.name, code, body)
		}
		if n := f.Calls(fixture.ToolEcho); n != before {
			t.Errorf("%s: the call reached the upstream", c.name)
		}
	}
	for _, c := range []struct {
		name  string
		extra map[string]string
	}{
		{"2025-03-26", map[string]string{"Mcp-Protocol-Version": "2025-03-26"}},
		{"no protocol version header", map[string]string{"Mcp-Protocol-Version": ""}},
		{"Accept */*", map[string]string{"Accept": "*/*"}},
	} {
		if code, body, _ := s.send("POST", call(`"ok"`), c.extra); code != http.StatusOK || !strings.Contains(body, `\"a\":1`) {
			t.Errorf("%s: %d %q, want the echo", c.name, code, body)
		}
	}
}

// A second call with the id of one in flight is refused (-32600): its
// cancellation could not tell the two apart. The first stays cancellable.
func TestFastPathRefusesDuplicateIDs(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true, "callTimeout": "30s"}})
	s := fpOpen(t, w, "/mcp/s")
	first := make(chan string, 1)
	go func() {
		_, body, _ := s.send("POST", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_value","arguments":{"key":"d","value":"v","sleep_ms":20000}}}`, nil)
		first <- body
	}()
	wardentest.WaitFor(t, 10*time.Second, "the first call to reach the upstream", func() bool { return f.WriteDispatches() == 1 })
	_, body, _ := s.send("POST", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_value","arguments":{"key":"d"}}}`, nil)
	var ans struct {
		ID    json.RawMessage
		Error *struct{ Code int }
	}
	if json.Unmarshal([]byte(body), &ans) != nil || ans.Error == nil || ans.Error.Code != -32600 || string(ans.ID) != "5" {
		t.Fatalf("a second call with id 5 in flight: %s, want a -32600 error for id 5", body)
	}
	if code, _, _ := s.send("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the first call was not cancelled")
	}
	wardentest.WaitFor(t, 10*time.Second, "the write cancelled upstream", func() bool { return f.WritesCancelled() == 1 })
}

// A write whose client goes away mid-call (the connection drops, or the
// session is deleted) is cancelled upstream and latches its server: with
// or without a progress token.
func TestFastPathClientGoneLatches(t *testing.T) {
	for _, c := range []struct{ name, meta, how string }{
		{"disconnect", "", "disconnect"},
		{"disconnect with progress token", `,"_meta":{"progressToken":"p1"}`, "disconnect"},
		{"session deleted", "", "delete"},
		{"session deleted with progress token", `,"_meta":{"progressToken":"p1"}`, "delete"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fixture.NewServer(fixture.Options{})
			w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true, "callTimeout": "30s"}})
			s := fpOpen(t, w, "/mcp/s")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.sendCtx(ctx, "POST", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"write_value","arguments":{"key":"k","value":"v","sleep_ms":20000}`+c.meta+`}}`, nil)
			}()
			wardentest.WaitFor(t, 10*time.Second, "the write to reach the upstream", func() bool { return f.WriteDispatches() == 1 })
			if c.how == "disconnect" {
				cancel()
			} else if code, _, _ := s.send("DELETE", "", nil); code >= 300 {
				t.Fatalf("DELETE: %d", code)
			}
			wardentest.WaitFor(t, 10*time.Second, "the write cancelled upstream", func() bool { return f.WritesCancelled() == 1 })
			wardentest.WaitFor(t, 10*time.Second, "the server latched", func() bool { return len(wlLatches(t, w)) == 1 })
			if f.WritesApplied() != 0 {
				t.Fatal("the write was applied")
			}
			cancel()
			<-done
		})
	}
}

// The same on the SDK server's path, which serves what the fast paths
// leave to it: a 2025 session's call whose id the fast path declines, and
// a 2026-07-28 call asking for progress. Its client's connection drops
// mid-call: the write is cancelled upstream and latches its server.
func TestSDKPathClientGoneLatches(t *testing.T) {
	const write = `"method":"tools/call","params":{"name":"write_value","arguments":{"key":"k","value":"v","sleep_ms":20000}`
	for _, c := range []struct{ name, body, era string }{
		{"2025 session", `{"jsonrpc":"2.0","id":"a<b",` + write + `}}`, "2025-11-25"},
		{"2026-07-28", `{"jsonrpc":"2.0","id":12,` + write + `,"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`, "2026-07-28"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fixture.NewServer(fixture.Options{})
			w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true, "callTimeout": "30s"}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var send func()
			if c.era == "2025-11-25" {
				s := fpOpen(t, w, "/mcp/s")
				send = func() { s.sendCtx(ctx, "POST", c.body, nil) }
			} else {
				w.WaitReady(t, "s")
				send = func() {
					req, _ := http.NewRequestWithContext(ctx, "POST", w.URL("/mcp/s"), strings.NewReader(c.body))
					for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
						"Mcp-Protocol-Version": c.era, "Mcp-Method": "tools/call", "Mcp-Name": fixture.ToolWrite} {
						req.Header.Set(k, v)
					}
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
				}
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				send()
			}()
			wardentest.WaitFor(t, 10*time.Second, "the write to reach the upstream", func() bool { return f.WriteDispatches() == 1 })
			cancel()
			<-done
			wardentest.WaitFor(t, 10*time.Second, "the write cancelled upstream", func() bool { return f.WritesCancelled() == 1 })
			wardentest.WaitFor(t, 10*time.Second, "the server latched", func() bool { return len(wlLatches(t, w)) == 1 })
			if f.WritesApplied() != 0 {
				t.Fatal("the write was applied")
			}
		})
	}
}

// A cancellation that overtakes its call (they travel on different
// connections) still cancels it: the call is not sent upstream.
func TestFastPathCancelBeforeCall(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}})
	s := fpOpen(t, w, "/mcp/s")
	if code, body, _ := s.send("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}`, nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
	_, body, _ := s.send("POST", `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"write_value","arguments":{"key":"k","value":"v"}}}`, nil)
	if !strings.Contains(body, `"isError":true`) {
		t.Fatalf("a call cancelled before it came: %s, want it refused", body)
	}
	if n := f.WriteDispatches(); n != 0 {
		t.Fatalf("a call cancelled before it came reached the upstream (%d dispatches)", n)
	}
	_, body, _ = s.send("POST", `{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{"name":"write_value","arguments":{"key":"k","value":"v"}}}`, nil)
	if !strings.Contains(body, "stored") || f.WritesApplied() != 1 {
		t.Fatalf("the next call: %s, want it stored", body)
	}
	if ls := wlLatches(t, w); len(ls) != 0 {
		t.Fatalf("a call that was never sent latched: %+v", ls)
	}
}
