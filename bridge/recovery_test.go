package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// The tests here use the fixture upstream (a real SDK server) as the stand-in
// for Warden's endpoint: its ForgetSessions does to session ids what a
// restarted Warden does (404, the old sessions closed).

// echo calls the fixture's echo tool through cs and fails the test unless it
// answers.
func echo(t *testing.T, cs *mcp.ClientSession, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolEcho, Arguments: map[string]any{"n": n}})
	if err != nil {
		t.Fatalf("echo %d: %v", n, err)
	}
	if want := fmt.Sprintf(`{"n":%d}`, n); text(res) != want {
		t.Fatalf("echo %d answered %q", n, text(res))
	}
}

// postedMethods lists the JSON-RPC methods the fixture received in POSTs, in
// the order they arrived.
func postedMethods(f *fixture.Fixture) []string {
	var out []string
	for _, r := range f.HTTP().Requests() {
		if r.Method == http.MethodPost {
			out = append(out, r.RPCMethods...)
		}
	}
	return out
}

// serveNoStream serves the fixture without the standalone GET stream (405),
// so only requests can notice a lost session.
func serveNoStream(t *testing.T, f *fixture.Fixture) string {
	h := f.HTTPHandler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no stream", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		f.HTTP().ForgetSessions() // closes the sessions
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// After a restart Warden answers 404 for the session: the bridge starts a new
// one (initialize and notifications/initialized replayed, the answer not shown
// to the client) and retries the request, so the client sees no error.
func TestBridgeStartsNewSessionOn404(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	cs, _, seen := startBridge(t, &Bridge{URL: serveNoStream(t, f)}, nil)
	echo(t, cs, 1)
	f.HTTP().ForgetSessions()
	echo(t, cs, 2)
	echo(t, cs, 3)

	if n := strings.Count(seen.String(), `"serverInfo"`); n != 1 {
		t.Fatalf("the client got %d initialize answers, want its own only:\n%s", n, seen)
	}
	if n := f.Initializes(); n != 2 {
		t.Fatalf("the upstream saw %d initializes, want 2 (the client's and one replay)", n)
	}
	if !strings.Contains(seen.String(), `"notifications/tools/list_changed"`) {
		t.Fatalf("the client was not told to list the tools again after the new session:\n%s", seen)
	}
	ids := f.HTTP().SessionIDs()
	if len(ids) != 2 {
		t.Fatalf("sessions %v, want the first and one new", ids)
	}
	var notes []string
	for _, r := range f.HTTP().Requests() {
		if r.Method == http.MethodPost && slices.Equal(r.RPCMethods, []string{"notifications/initialized"}) {
			notes = append(notes, r.SessionID)
		}
	}
	if !slices.Equal(notes, ids) {
		t.Fatalf("notifications/initialized went to sessions %v, want %v", notes, ids)
	}
}

// With the client idle, the notification stream follows Warden to a new
// session: list changes after a restart still reach the client.
func TestBridgeListenerFollowsNewSession(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	url := f.Serve(t)
	changed := make(chan struct{}, 16)
	cs, _, seen := startBridge(t, &Bridge{URL: url}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	echo(t, cs, 1)
	f.HTTP().ForgetSessions()

	// The bridge tells the client to list again once it has a new session;
	// a list change after that must come through the new session's stream.
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the client was not told to list the tools again after the new session")
	}
	if !f.ChangeToolsUntil(changed, 10*time.Second) {
		t.Fatal("no tools/list_changed reached the client after the session was lost")
	}
	echo(t, cs, 2)
	if n := strings.Count(seen.String(), `"serverInfo"`); n != 1 {
		t.Fatalf("the client got %d initialize answers, want its own only", n)
	}
}

// While Warden restarts (connection refused), a request waits up to
// reconnectFor for it to come back rather than failing at once; after that
// it fails, saying how to start Warden.
func TestBridgeWaitsForRestartingWarden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fixture.NewServer(fixture.Options{})
		n := testenv.NewMemNet(t)
		n.Serve(f.HTTPHandler())
		t.Cleanup(f.HTTP().ForgetSessions)
		cs, _, _ := startBridge(t, &Bridge{URL: testenv.MemURL + "/mcp", Client: n.Client()}, nil)
		echo(t, cs, 1)

		call := func() <-chan error {
			called := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: fixture.ToolEcho, Arguments: map[string]any{}})
				called <- err
			}()
			return called
		}
		n.Stop() // Warden stops...
		f.HTTP().ForgetSessions()
		synctest.Wait() // the client's transport has seen its connections closed
		called := call()
		time.Sleep(reconnectFor - time.Second)
		synctest.Wait()
		select {
		case err := <-called:
			t.Fatalf("the call ended while Warden was down: %v", err)
		default:
		}
		n.Serve(f.HTTPHandler()) // ...and comes back on its address
		if err := <-called; err != nil {
			t.Fatalf("the call made while Warden restarted: %v", err)
		}
		echo(t, cs, 2)

		n.Stop() // and stops for longer
		called = call()
		time.Sleep(reconnectFor)
		synctest.Wait()
		select {
		case err := <-called:
			if err == nil || !strings.Contains(err.Error(), "warden serve") {
				t.Fatalf("a call after Warden stayed away %v: %v, want an error naming \"warden serve\"", reconnectFor, err)
			}
		default:
			t.Fatalf("the call still waits %v after Warden went away", reconnectFor)
		}
		n.Serve(f.HTTPHandler())
	})
}

// slowTransport delays the POSTs that carry one of methods before sending
// them, as a slow link would.
type slowTransport struct {
	methods []string
	delay   time.Duration
	next    http.RoundTripper
}

func (s *slowTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.GetBody != nil {
		if body, err := r.GetBody(); err == nil {
			b, _ := io.ReadAll(body)
			for _, m := range s.methods {
				if bytes.Contains(b, []byte(`"method":"`+m+`"`)) {
					time.Sleep(s.delay) // the slow link, on synctest's clock
				}
			}
		}
	}
	return s.next.RoundTrip(r)
}

// Messages reach Warden in the order the client wrote them, even when one
// is slow to send: notifications/initialized before the first request, a
// request before the notifications/cancelled that cancels it.
func TestBridgeKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fixture.NewServer(fixture.Options{})
		n := testenv.NewMemNet(t)
		n.Serve(f.HTTPHandler())
		t.Cleanup(f.HTTP().ForgetSessions)
		tr := &slowTransport{methods: []string{"notifications/initialized", "tools/call"}, delay: 300 * time.Millisecond, next: n.Client().Transport}
		cs, _, _ := startBridge(t, &Bridge{URL: testenv.MemURL + "/mcp", Client: &http.Client{Transport: tr}}, nil)

		ctx := context.Background()
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		callCtx, cancelCall := context.WithCancel(ctx)
		called := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: map[string]any{"value": "v", "sleep_ms": 10000}})
			called <- err
		}()
		synctest.Wait() // the call is on its (slow) way
		cancelCall()
		<-called
		time.Sleep(time.Second) // the slow call and its cancellation arrive
		synctest.Wait()
		if f.WritesCancelled() != 1 {
			t.Fatalf("the cancellation did not stop the call (%d dispatched, %d cancelled); methods in arrival order: %v",
				f.WriteDispatches(), f.WritesCancelled(), postedMethods(f))
		}
		got := postedMethods(f)
		before := func(a, b string) bool {
			i, j := slices.Index(got, a), slices.Index(got, b)
			return i >= 0 && j >= 0 && i < j
		}
		if !before("notifications/initialized", "tools/list") || !before("tools/call", "notifications/cancelled") {
			t.Fatalf("methods arrived in the order %v", got)
		}
	})
}

// A call whose response stream ends without the reply is answered with an
// error instead of hanging. The upstream's tool ends its stream the SDK's way
// (CloseSSEStream) and never answers.
func TestBridgeAnswersCallCutShort(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	release := make(chan struct{})
	f.Server.AddTool(&mcp.Tool{Name: "cut", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{})
			select {
			case <-ctx.Done():
			case <-release:
			}
			return &mcp.CallToolResult{}, nil
		})
	url := f.Serve(t)
	t.Cleanup(func() { close(release) })
	cs, _, _ := startBridge(t, &Bridge{URL: url}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cut", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "ended before the answer") {
		t.Fatalf("the cut-short call answered %v, want an error saying the connection ended before the answer", err)
	}
	echo(t, cs, 1) // and the bridge goes on
}

// A message over 16 MiB is refused with an error for its id, and the bridge
// reads on.
func TestBridgeRefusesOversizedCall(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	cs, _, _ := startBridge(t, &Bridge{URL: f.Serve(t)}, nil)
	// (A bound against hanging: encoding 17 MiB under -race beside the
	// rest of the suite has taken over 20 s.)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolEcho, Arguments: map[string]any{"big": strings.Repeat("x", 17<<20)}})
	if err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("a 17 MiB call answered %v, want an error naming the 16 MiB limit", err)
	}
	echo(t, cs, 1)
}

// An oversized line whose id is not among its first bytes is answered with a
// parse error for a null id; one with its id first gets that id.
func TestBridgeRefusesOversizedLines(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- (&Bridge{URL: f.Serve(t)}).Run(context.Background(), inR, outW)
		outW.Close()
		inR.Close() // a bridge that stopped fails the writes instead of blocking them
	}()
	defer func() {
		// A client that closes its end of stdin still reads stdout (or
		// closes it): what the bridge writes meanwhile (a notification
		// from the event stream) must not block its stop.
		go io.Copy(io.Discard, outR)
		inW.Close()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop")
		}
	}()
	lines := bufio.NewScanner(outR)
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("bridge output ended: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("bridge wrote a line that is not JSON: %q", lines.Text())
		}
		return m
	}
	big := strings.Repeat("y", 17<<20)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize answer: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"big":"` + big + `"}},"id":2}`)
	m := next()
	e, _ := m["error"].(map[string]any)
	if _, hasID := m["id"]; !hasID || m["id"] != nil || e == nil || e["code"] != float64(-32700) {
		t.Fatalf("an oversized line with its id last answered %v, want a -32700 error for a null id", m)
	}
	send(`{"jsonrpc":"2.0","id":"big-3","method":"tools/call","params":{"name":"echo","arguments":{"big":"` + big + `"}}}`)
	m = next()
	if e, _ := m["error"].(map[string]any); m["id"] != "big-3" || e == nil || !strings.Contains(fmt.Sprint(e["message"]), "16 MiB") {
		t.Fatalf("an oversized call answered %v, want an error for id big-3 naming the limit", m)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if m := next(); m["id"] != float64(4) || m["result"] == nil {
		t.Fatalf("ping after the oversized lines answered %v", m)
	}
}
