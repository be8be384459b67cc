package surface_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
	"github.com/wardenmcp/warden/surface"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// At the session limit, with every session used, a new session is refused
// with 503 and Retry-After, saying why; a session that ends makes room.
func TestSessionLimit(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 1)
	e.WaitListed(t, "fx")
	first := e.connect(t, "/mcp", nil, session2025)
	if names := toolNames(t, first); !has(names, "fx__echo") {
		t.Fatalf("the first session sees %v", names)
	}

	resp, body := rawPost(t, e.URL+"/mcp/fx", initialize, nil)
	var refusal struct {
		Error struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(body), &refusal); err != nil {
		t.Fatalf("a session over the limit: %d %q (%v)", resp.StatusCode, body, err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "10" || refusal.Error.Code != -32000 ||
		!strings.Contains(refusal.Error.Message, "1 client sessions open, its limit") {
		t.Fatalf("a session over the limit: %d, Retry-After %q, %+v", resp.StatusCode, resp.Header.Get("Retry-After"), refusal)
	}

	// The session in place still works; once it ends there is room.
	if names := toolNames(t, first); !has(names, "fx__echo") {
		t.Fatalf("the first session sees %v", names)
	}
	first.Close()
	parts.WaitFor(t, 20*time.Second, "room for a new session", func() bool {
		c := mcp.NewClient(&mcp.Implementation{Name: "again", Version: "1"}, nil)
		cs, err := c.Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp"}, session2025)
		if err != nil {
			return false
		}
		cs.Close()
		return true
	})
}

// openUnused opens a session on url in raw HTTP and initializes it, and
// does nothing more, as a flood of sessions does; it returns its id.
func openUnused(t *testing.T, url string) string {
	t.Helper()
	resp, body := rawPost(t, url, initialize, nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	if resp, _ := rawPost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": id}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	return id
}

// gone reports whether the session id on url has ended: its request is
// answered 404.
func gone(t *testing.T, url, id string) bool {
	resp, _ := rawPost(t, url, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"})
	return resp.StatusCode == http.StatusNotFound
}

// At the session limit a new session takes the place of a session that
// has done no real work (initialize and ping are none), born first; a
// session that has done work is kept, and when every session has, the new
// one is refused.
func TestUnusedSessionsMakeRoom(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 3)
	e.WaitListed(t, "fx")
	worked := e.connect(t, "/mcp", nil, session2025)
	toolNames(t, worked)
	older, newer := openUnused(t, e.URL+"/mcp/fx"), openUnused(t, e.URL+"/mcp")
	if gone(t, e.URL+"/mcp/fx", older) { // a ping is no work, and keeps it
		t.Fatal("a session at the limit, but not over it, ended")
	}

	fresh := e.connect(t, "/mcp", nil, session2025)
	if names := toolNames(t, fresh); !has(names, "fx__echo") {
		t.Fatalf("the new session sees %v", names)
	}
	parts.WaitFor(t, 10*time.Second, "the unused session born first to end", func() bool { return gone(t, e.URL+"/mcp/fx", older) })
	if gone(t, e.URL+"/mcp", newer) {
		t.Fatal("the unused session born later ended too: one new session made room for itself only")
	}
	if names := toolNames(t, worked); !has(names, "fx__echo") {
		t.Fatalf("the session that worked sees %v", names)
	}

	// The unused one makes room once more; then every session has worked.
	third := e.connect(t, "/mcp", nil, session2025)
	toolNames(t, third)
	parts.WaitFor(t, 10*time.Second, "the other unused session to end", func() bool { return gone(t, e.URL+"/mcp", newer) })
	if resp, body := rawPost(t, e.URL+"/mcp", initialize, nil); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "each has been used") {
		t.Fatalf("a new session with every session used: %d %s, want 503 saying why", resp.StatusCode, body)
	}
}

// New sessions arriving at once at the limit each take the place of a
// different unused session: as many make room as there are unused ones,
// never two the same one.
func TestEvictUnusedConcurrently(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	const n = 200 // enough that, without the claim in evictUnused, two take the same one (seen under -race)
	for range n {
		openUnused(t, e.URL+"/mcp")
	}
	var (
		start = make(chan struct{})
		made  atomic.Int32
		wg    sync.WaitGroup
	)
	for range 3 * n {
		wg.Go(func() {
			<-start
			if e.S.EvictUnused() {
				made.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if got := made.Load(); got != n {
		t.Fatalf("%d evictions made room over %d unused sessions, want %d: one session was taken twice", got, n, n)
	}
}

// A session that has done no real work is closed after the shorter idle
// time for such sessions; one that has worked, as quiet, is kept.
func TestUnusedSessionIdlesOutSooner(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	worked := openUnused(t, e.URL+"/mcp")
	if resp, _ := rawPost(t, e.URL+"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": worked, "Mcp-Protocol-Version": "2025-11-25"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d", resp.StatusCode)
	}
	unused := openUnused(t, e.URL+"/mcp") // quiet from now on; the worked one from before
	// Rounds of closing until the unused session, quiet for longer than
	// the unused limit, is closed; the worked one is as quiet, and longer.
	parts.WaitFor(t, 10*time.Second, "the unused session to be closed", func() bool {
		e.S.CloseIdleNow(time.Hour, time.Millisecond)
		return gone(t, e.URL+"/mcp", unused)
	})
	if gone(t, e.URL+"/mcp", worked) {
		t.Fatal("a session that had worked was closed as unused")
	}
}

// A session without a request for its idle time is closed: its next
// request is answered 404, as for any ended session. One that keeps an
// event stream open (as the SDK client does) is not idle.
func TestIdleSessionClosed(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), time.Second, 0)
	e.WaitListed(t, "fx")
	sessions := func() int {
		n := 0
		for range e.S.Server("fx").Sessions() {
			n++
		}
		return n
	}
	streaming := e.connect(t, "/mcp/fx", nil, session2025)

	// A raw session, initialized, then left alone.
	resp, _ := rawPost(t, e.URL+"/mcp/fx", initialize, nil)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp, _ := rawPost(t, e.URL+"/mcp/fx", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{"Mcp-Session-Id": id}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", resp.StatusCode)
	}
	// Awaited without a request of its own, which would keep it alive.
	parts.WaitFor(t, 20*time.Second, "the idle session to be closed", func() bool { return sessions() == 1 })
	if resp, _ := rawPost(t, e.URL+"/mcp/fx", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": id}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of the closed session: %d, want 404", resp.StatusCode)
	}
	// The streaming session, older and as quiet, lives on.
	if names := toolNames(t, streaming); !has(names, fixture.ToolEcho) {
		t.Fatalf("the streaming session sees %v", names)
	}
}

// Two tools of a server whose aggregated names meet (one altered to fit
// the name rules, the other named as that) are listed by neither name on
// /mcp, and a call by it says so; /mcp/{server} lists both as they are.
func TestContestedNames(t *testing.T) {
	altered := "do.it"
	plain := strings.TrimPrefix(surface.Join("x", altered), "x__")
	fx := fixture.NewServer(fixture.Options{})
	for _, name := range []string{altered, plain} {
		fx.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: fixture.ClassAnnotations("read")})
	}
	e := newEnv(t, fmt.Sprintf(`{"x": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	e.WaitListed(t, "x")
	agg := e.connect(t, "/mcp", nil, session2025)
	waitTools(t, agg, "x's tools", func(n []string) bool { return has(n, "x__echo") })
	if names := toolNames(t, agg); slices.Contains(names, "x__"+plain) {
		t.Errorf("/mcp lists the contested name: %v", names)
	}
	if _, _, _, err := callText(t, agg, "x__"+plain, nil); err == nil || !strings.Contains(err.Error(), "stands for two tools") {
		t.Errorf("a call by the contested name: %v", err)
	}
	own := e.connect(t, "/mcp/x", nil, session2025)
	if names := toolNames(t, own); !has(names, altered, plain) {
		t.Errorf("/mcp/x lists %v; want both tools", names)
	}

	// Without the other, the name is the remaining tool's again.
	fx.RemoveTools(plain)
	waitTools(t, agg, "the altered name listed", func(n []string) bool { return has(n, "x__"+plain) })
}

// A fast call the client cancels is cancelled upstream: a write that was
// sent is then in doubt, and latched.
func TestCancelledFastCall(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	cs := e.connect(t, "/mcp", nil, session2025)
	waitTools(t, cs, "fx's tools", func(n []string) bool { return has(n, "fx__write_value") })

	c, cancel := context.WithCancel(context.Background())
	go func() {
		wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer wcancel()
		if fx.WaitWriteDispatches(wctx, 1) == nil {
			cancel() // the SDK client sends notifications/cancelled
		}
	}()
	_, err := cs.CallTool(c, &mcp.CallToolParams{Name: "fx__write_value", Arguments: map[string]any{"value": "v", "sleep_ms": 20000}})
	if err == nil {
		t.Fatal("a cancelled call answered")
	}
	parts.WaitFor(t, 20*time.Second, "the write to be cancelled upstream and latched", func() bool {
		return fx.WritesCancelled() == 1 && len(e.Writes.List()) == 1
	})
	if l := e.Writes.List()[0]; l.Reason != "cancelled" || l.Surface != "mcp" {
		t.Errorf("latch %+v", l)
	}
}

// Close ends every client session, of /mcp and of a server's own endpoint:
// a stopping daemon leaves none behind.
func TestCloseEndsEverySession(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	log := slog.New(slog.DiscardHandler)
	p := parts.New(t, log)
	s := surface.New(p.Gateway, log, "test", 0, 0)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	p.Start(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)))
	p.WaitListed(t, "fx")
	sessions := map[string]string{"/mcp": "", "/mcp/fx": ""}
	for path := range sessions {
		sessions[path] = openUnused(t, srv.URL+path)
	}
	s.Close()
	for path, id := range sessions {
		parts.WaitFor(t, 10*time.Second, "the session on "+path+" to end", func() bool { return gone(t, srv.URL+path, id) })
	}
}
