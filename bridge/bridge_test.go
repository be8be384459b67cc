package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// upstream is an SDK streamable-HTTP server standing in for Warden's /mcp,
// on a network in memory (the tests that use it run on synctest's clock).
type upstream struct {
	net       *testenv.MemNet
	srv       *mcp.Server
	deletes   atomic.Int64
	cancelled chan struct{}
	auth      sync.Map // method → the Authorization header it last came with
}

func startUpstream(t *testing.T, jsonResponse bool) *upstream {
	t.Helper()
	u := &upstream{net: testenv.NewMemNet(t), cancelled: make(chan struct{}, 1)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-warden", Version: "1"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{"2025-11-25", "2025-06-18", "2025-03-26"},
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		b, _ := json.Marshal(in)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "asking"})
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "question"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
			u.cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "waited"}}}, nil, nil
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	u.srv = srv
	u.net.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.auth.Store(r.Method, r.Header.Get("Authorization"))
		if r.Method == http.MethodDelete {
			u.deletes.Add(1)
			// A slow answer: what the bridge does after its DELETE
			// ended the session happens before it.
			defer time.Sleep(time.Second)
		}
		h.ServeHTTP(w, r)
	}))
	return u
}

// bridge is a Bridge to the upstream.
func (u *upstream) bridge() *Bridge {
	return &Bridge{URL: testenv.MemURL + "/mcp", Client: u.net.Client()}
}

// startBridge runs b on pipes and connects an SDK client to it over stdio.
// It also returns what the bridge wrote to the client. The client and the
// bridge are stopped when the test ends.
func startBridge(t *testing.T, b *Bridge, opts *mcp.ClientOptions) (*mcp.ClientSession, <-chan error, *testenv.Buffer) {
	t.Helper()
	inR, inW := io.Pipe()   // client → bridge stdin
	outR, outW := io.Pipe() // bridge stdout → client
	done := make(chan error, 1)
	stopped := make(chan struct{})
	go func() {
		err := b.Run(context.Background(), inR, outW)
		outW.Close()
		done <- err
		close(stopped)
	}()
	seen := &testenv.Buffer{}
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Closing the session closes its end of the bridge's stdout, as a
	// client process's end closes when it exits: what the bridge writes
	// after that fails instead of waiting for a reader that is gone.
	stdout := struct {
		io.Reader
		io.Closer
	}{io.TeeReader(outR, seen), outR}
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect through the bridge: %v", err)
	}
	t.Cleanup(func() {
		cs.Close() // closes the bridge's stdout too (see stdout above)
		inW.Close()
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Error("the bridge did not stop after stdin closed")
		}
	})
	return cs, done, seen
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The bridge carries a stdio client's session to Warden's endpoint, with
// JSON or event-stream answers: concurrent calls, a server's request and
// log during a call, a cancellation, and a DELETE when stdin ends.
func TestBridge(t *testing.T) {
	for _, mode := range []struct {
		name string
		json bool
	}{{"json responses", true}, {"event-stream responses", false}} {
		t.Run(mode.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				up := startUpstream(t, mode.json)
				var mu sync.Mutex
				var logs []string
				cs, done, _ := startBridge(t, up.bridge(), &mcp.ClientOptions{
					CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
						return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "the answer"}}, nil
					},
					LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
						mu.Lock()
						logs = append(logs, fmt.Sprint(r.Params.Data))
						mu.Unlock()
					},
				})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
					t.Fatalf("negotiated %q through the bridge", got)
				}
				tools, err := cs.ListTools(ctx, nil)
				if err != nil || len(tools.Tools) != 3 {
					t.Fatalf("tools/list: %v %v", tools, err)
				}
				// Concurrent calls are all answered, each with its own result.
				var wg sync.WaitGroup
				errs := make(chan error, 8)
				for i := range 8 {
					wg.Go(func() {
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"n": i}})
						if err != nil {
							errs <- err
						} else if want := fmt.Sprintf(`{"n":%d}`, i); text(res) != want {
							errs <- fmt.Errorf("echo %d answered %q", i, text(res))
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				// A server-to-client request during a call, and the client's answer.
				if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
					t.Fatal(err)
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
				if err != nil || text(res) != "the answer" {
					t.Fatalf("ask: %v %v", res, err)
				}
				synctest.Wait()
				mu.Lock()
				n := len(logs)
				mu.Unlock()
				if n == 0 {
					t.Fatal("the log message sent during the call did not come through")
				}
				// Cancellation goes through.
				cctx, ccancel := context.WithCancel(ctx)
				callDone := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
					callDone <- err
				}()
				synctest.Wait() // the call is waiting upstream
				ccancel()
				<-callDone
				select {
				case <-up.cancelled:
				case <-time.After(5 * time.Second):
					t.Fatal("the cancellation did not reach the server")
				}
				// Closing stdin ends the bridge, which ends the session and
				// starts no other.
				cs.Close()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the bridge did not stop after stdin closed")
				}
				if up.deletes.Load() != 1 {
					t.Fatalf("the bridge sent %d DELETEs at the end, want 1", up.deletes.Load())
				}
				synctest.Wait()
				for ss := range up.srv.Sessions() {
					t.Errorf("session %s is open upstream after the bridge ended", ss.ID())
					ss.Close()
				}
			})
		})
	}
}

// A request that cannot be delivered is answered with a JSON-RPC error, so
// the client is not left waiting; notifications are dropped.
func TestBridgeAnswersUndeliverableRequests(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			http.Error(w, "no stream", http.StatusMethodNotAllowed)
			return
		case http.MethodDelete:
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		if m.Method == "initialize" {
			if r.Header.Get("Mcp-Session-Id") != "" {
				t.Errorf("initialize sent with a session id")
			}
			w.Header().Set("Mcp-Session-Id", "sess-1")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}`, m.ID)
			return
		}
		if r.Header.Get("Mcp-Session-Id") != "sess-1" || r.Header.Get("Mcp-Protocol-Version") != "2025-06-18" {
			t.Errorf("%s sent with session %q and version %q", m.Method, r.Header.Get("Mcp-Session-Id"), r.Header.Get("Mcp-Protocol-Version"))
		}
		http.Error(w, "upstream is down", http.StatusServiceUnavailable)
	}))
	defer ts.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- (&Bridge{URL: ts.URL}).Run(context.Background(), inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		if !lines.Scan() {
			t.Fatalf("bridge output ended: %v", lines.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("bridge wrote a line that is not JSON: %q", lines.Text())
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize answer: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":"req-2","method":"tools/list"}`)
	m := next()
	e, _ := m["error"].(map[string]any)
	if m["id"] != "req-2" || e == nil || !strings.Contains(fmt.Sprint(e["message"]), "503") || !strings.Contains(fmt.Sprint(e["message"]), "upstream is down") {
		t.Fatalf("undeliverable tools/list answered %v, want a JSON-RPC error for id req-2 naming the 503", m)
	}
	inW.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the bridge did not stop")
	}
}

// With Warden not running, the bridge fails at once and says what to do.
func TestBridgeWithoutDaemon(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close() // nothing listens there now
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n")
	err := (&Bridge{URL: url}).Run(context.Background(), in, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "warden serve") {
		t.Fatalf("Run without a daemon: %v, want an error that names \"warden serve\"", err)
	}
}

// A client of the 2026-07-28 revision has no session: each request goes
// with the headers that revision's HTTP transport asks for, and a request
// the endpoint refuses with an HTTP status gets its JSON-RPC error as the
// answer.
func TestStatelessClient(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-warden", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in["say"])}}}, nil, nil
	})
	var mu sync.Mutex
	var headers []http.Header
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.Header.Clone())
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = (&Bridge{URL: ts.URL}).Run(context.Background(), inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() {
		go io.Copy(io.Discard, outR)
		inW.Close()
		<-stopped
	})
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect through the bridge: %v", err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s through the bridge, want 2026-07-28", v)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"say": "hi"}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("call: %+v (%v)", res, err)
	}
	mu.Lock()
	last := headers[len(headers)-1]
	mu.Unlock()
	for k, want := range map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"} {
		if got := last.Get(k); got != want {
			t.Errorf("tools/call went with %s: %q, want %q", k, got, want)
		}
	}
	if last.Get("Mcp-Session-Id") != "" {
		t.Errorf("a stateless request went with a session id")
	}
	// The endpoint answers an unknown method with 404 and its JSON-RPC error.
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "nope"}) // the server has no prompts
	if err == nil || strings.Contains(err.Error(), "warden answered") {
		t.Errorf("an unknown prompt: %v; want the endpoint's own JSON-RPC error", err)
	}
}

// Warden's JSON-RPC answer to a message it refused goes to the client as
// it is when it is the message's answer; one under no id, to a request
// that has one, gives its reason to the bridge's own answer under the id.
func TestRefusal(t *testing.T) {
	const req, note = `{"jsonrpc":"2.0","id":"a","method":"ping"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	for _, c := range []struct {
		body, msg, reason string
		answer            bool
	}{
		{`{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"no view"}}`, req, "", true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"busy"}}`, req, "busy", false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, `garbage{`, "", true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no view"}}`, note, "", true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad id"}}`, `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, "", true},
		{`[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no batches"}}]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "", true},
		{`{"jsonrpc":"2.0","id":"b","error":{"code":-32600,"message":"another's"}}`, req, "", false},
		{"upstream is down", req, "", false},
	} {
		if answer, reason := refusal([]byte(c.body), []byte(c.msg)); answer != c.answer || reason != c.reason {
			t.Errorf("refusal(%s, %s) = %v, %q; want %v, %q", c.body, c.msg, answer, reason, c.answer, c.reason)
		}
	}
}

// With a token, every request the bridge makes carries it: its POSTs and
// the GET of its event stream.
func TestBridgeSendsToken(t *testing.T) {
	u := startUpstream(t, false)
	b := u.bridge()
	b.Token = "t0k3n"
	cs, _, _ := startBridge(t, b, nil)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := u.auth.Load(http.MethodPost); got != "Bearer t0k3n" {
		t.Errorf("POST with %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, ok := u.auth.Load(http.MethodGet)
		if ok {
			if got != "Bearer t0k3n" {
				t.Errorf("GET with %q", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bridge opened no event stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
