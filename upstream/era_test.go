package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/protocol"
)

// A tools/call on a session the upstream negotiated at 2026-07-28 carries
// that revision's standard headers, and the Mcp-Param-* header a listed
// tool's x-mcp-header annotation asks for (SEP-2243): such a tool's call
// goes through the SDK's client, which writes it (the direct HTTP path
// writes the standard headers only).
func TestCallOn2026SessionSendsStandardHeaders(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	up := toolsUpstream(t, "2026-07-28", `[{"name":"t","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]`, func(r *http.Request) {
		mu.Lock()
		got = r.Header.Clone()
		mu.Unlock()
	})
	c := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{})
	defer c.Stop()
	if err := c.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := c.Do(context.Background(), func(ctx context.Context, cs *mcp.ClientSession) error {
		_, err := c.callTool(ctx, cs, &Call{Params: &mcp.CallToolParams{Name: "t", Arguments: map[string]any{"region": "us-west1"}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for h, want := range map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "t", "Mcp-Param-Region": "us-west1", "Mcp-Protocol-Version": "2026-07-28"} {
		if v := got.Get(h); v != want {
			t.Errorf("tools/call header %s = %q, want %q", h, v, want)
		}
	}
}

// askPeer answers every question with err.
type askPeer struct {
	nopPeer
	err error
}

func (p askPeer) Ask(context.Context, string, string, mcp.InputRequest) (mcp.InputResponse, error) {
	return nil, p.err
}

// A stateless-era upstream that asks for input which never comes has
// answered every request it was sent, and is sent no other: the call ends
// with a JSON-RPC error, an answered outcome (a write is not latched for
// it), and the client's own refusal passes as it is.
func TestRoundsWithoutAnswersAreAnswered(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	var calls sync.Mutex
	sent := 0
	mcp.AddTool(srv, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		calls.Lock()
		sent++
		calls.Unlock()
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"user_name": &mcp.ElicitParams{Message: "name?"}}}, nil, nil
	})
	up := fixture.ServeSDK(t, srv, &mcp.StreamableHTTPOptions{Stateless: true})
	for _, c := range []struct {
		name     string
		peerErr  error
		wantCode int64
	}{
		{"the client is gone", context.DeadlineExceeded, jsonrpc.CodeInternalError},
		{"the client cannot elicit", &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "no elicitation"}, mcp.CodeMissingRequiredClientCapabilities},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{Peer: askPeer{err: c.peerErr}})
			defer conn.Stop()
			if err := conn.Ready(context.Background()); err != nil {
				t.Fatal(err)
			}
			calls.Lock()
			sent = 0
			calls.Unlock()
			err := conn.Do(context.Background(), func(ctx context.Context, cs *mcp.ClientSession) error {
				if v := cs.InitializeResult().ProtocolVersion; v != protocol.Newest {
					t.Fatalf("negotiated %s, want %s", v, protocol.Newest)
				}
				_, err := conn.callTool(ctx, cs, &Call{Params: &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}}})
				return err
			})
			a := Answer(err)
			if a == nil || a.Code != c.wantCode {
				t.Fatalf("error %v; want an answered one of code %d", err, c.wantCode)
			}
			calls.Lock()
			defer calls.Unlock()
			if sent != 1 {
				t.Errorf("the server was called %d times, want once", sent)
			}
		})
	}
}

// A stateless-era call tells the upstream what the caller can answer and
// the log level clients set, unless the call names its own.
func TestAskable(t *testing.T) {
	caller := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, RootsV2: &mcp.RootCapabilities{}}
	in := &mcp.CallToolParams{Name: "t", Meta: mcp.Meta{"progressToken": "p"}}
	got := askable(in, caller, "debug", false)
	b, _ := json.Marshal(got.Meta[mcp.MetaKeyClientCapabilities])
	if string(b) != `{"elicitation":{},"roots":{}}` {
		t.Errorf("capabilities %s, want elicitation and roots only", b)
	}
	if got.Meta[mcp.MetaKeyLogLevel] != mcp.LoggingLevel("debug") || got.Meta["progressToken"] != "p" {
		t.Errorf("meta %v, want the level and the progress token", got.Meta)
	}
	if len(in.Meta) != 1 {
		t.Errorf("the caller's params were changed: %v", in.Meta)
	}
	own := askable(&mcp.CallToolParams{Meta: mcp.Meta{mcp.MetaKeyLogLevel: "error"}}, nil, "debug", false)
	b, _ = json.Marshal(own.Meta[mcp.MetaKeyClientCapabilities])
	if own.Meta[mcp.MetaKeyLogLevel] != "error" || string(b) != `{}` {
		t.Errorf("an operator call naming its level: %v, capabilities %s", own.Meta, b)
	}
}

// elicitPeer accepts every elicitation with its message as the value, and
// notes the keys it was asked under.
type elicitPeer struct {
	nopPeer
	mu   *sync.Mutex
	keys *[]string
}

func (p elicitPeer) Ask(_ context.Context, _, key string, q mcp.InputRequest) (mcp.InputResponse, error) {
	p.mu.Lock()
	*p.keys = append(*p.keys, key)
	p.mu.Unlock()
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"v": q.(*mcp.ElicitParams).Message}}, nil
}

// A 2025 upstream speaks some of 2026-07-28 too, as the Go SDK's server
// does on a session: it reads the caller's capabilities from a request's
// _meta, and a tool that returns questions round after round has the first
// round's put to the client as requests of its own, the later ones
// returned in its result. On both paths Warden tells it what the caller can
// answer (so it refuses what needs more, as it would the caller directly),
// and answers those later rounds and calls again, as it does a
// stateless-era upstream's.
func TestSessionUpstreamSpeaking2026(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	answer := func(r mcp.InputResponseMap, key string) string {
		a, _ := r[key].(*mcp.ElicitResult)
		if a == nil {
			return "?"
		}
		s, _ := a.Content["v"].(string)
		return s
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "rounds"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		ask := func(key, state string) *mcp.CallToolResult {
			return &mcp.CallToolResult{RequestState: state, InputRequests: mcp.InputRequestMap{
				key: &mcp.ElicitParams{Message: key + "?", RequestedSchema: &jsonschema.Schema{
					Type: "object", Properties: map[string]*jsonschema.Schema{"v": {Type: "string"}}}}}}
		}
		switch st := req.Params.RequestState; st {
		case "":
			return ask("one", "r1"), nil, nil
		case "r1":
			return ask("two", "r2;"+answer(req.Params.InputResponses, "one")), nil, nil
		default:
			text := st[len("r2;"):] + "," + answer(req.Params.InputResponses, "two")
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		}
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "samples"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
			return nil, nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required"}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "told"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		_, told := req.Params.Meta[mcp.MetaKeyClientCapabilities]
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(told)}}}, nil, nil
	})
	up := fixture.ServeSDK(t, srv, nil)

	for _, path := range []struct {
		name   string
		noFast bool
	}{{"direct path", false}, {"SDK path", true}} {
		t.Run(path.name, func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			conn := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second},
				Options{Peer: elicitPeer{mu: &mu, keys: &keys}, NoFastPath: path.noFast})
			defer conn.Stop()
			if err := conn.Ready(context.Background()); err != nil {
				t.Fatal(err)
			}
			call := func(name string, caller *mcp.ClientCapabilities, perRequest bool) (string, error) {
				var text string
				err := conn.Do(context.Background(), func(ctx context.Context, cs *mcp.ClientSession) error {
					if v := cs.InitializeResult().ProtocolVersion; v >= protocol.StatelessSince {
						t.Fatalf("negotiated %s; the test wants a session", v)
					}
					res, err := conn.callTool(ctx, cs, &Call{Params: &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}, Origin: origin{caller, perRequest}})
					if err != nil {
						return err
					}
					d, err := res.Tool()
					if err != nil || len(d.Content) != 1 {
						return fmt.Errorf("result %+v (%v)", d, err)
					}
					text = d.Content[0].(*mcp.TextContent).Text
					return nil
				})
				return text, err
			}

			if text, err := call("rounds", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, false); err != nil || text != "one?,two?" {
				t.Errorf("a call over two rounds: %q (%v), want %q", text, err, "one?,two?")
			}
			mu.Lock()
			if fmt.Sprint(keys) != "[ two]" {
				t.Errorf("asked under the keys %q; want the first question without one (the server's own request), the second under its key", keys)
			}
			mu.Unlock()

			if _, err := call("samples", &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, true); Answer(err) == nil || Answer(err).Code != mcp.CodeMissingRequiredClientCapabilities {
				t.Errorf("a caller without sampling: %v; want the upstream's refusal, %d", err, mcp.CodeMissingRequiredClientCapabilities)
			}
			if text, err := call("samples", &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, true); err != nil || text != "sampled" {
				t.Errorf("a caller with sampling: %q (%v)", text, err)
			}
			// Told only when the caller says it per request (a 2026-07-28
			// client) and answers less than the session said.
			all := &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}, RootsV2: &mcp.RootCapabilities{},
				Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}}
			for _, c := range []struct {
				caller     *mcp.ClientCapabilities
				perRequest bool
				want       string
			}{{all, true, "false"}, {&mcp.ClientCapabilities{}, true, "true"}, {&mcp.ClientCapabilities{}, false, "false"}, {nil, false, "false"}} {
				if text, err := call("told", c.caller, c.perRequest); err != nil || text != c.want {
					t.Errorf("caller %+v, per request %v: told %s (%v), want %s", c.caller, c.perRequest, text, err, c.want)
				}
			}
		})
	}
}

// An upstream that answers the discovery with something that is not
// JSON-RPC (an error page) is asked for a session, as one that says no is,
// rather than retried the same way forever.
func TestDiscoveryAnsweredOddly(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		var m rpcMessage
		json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Mcp-Session-Id", "s1")
		switch m.Method {
		case "server/discover":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `<html>oops</html>`)
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}}`, m.ID)
		case "tools/list":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, m.ID)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer up.Close()
	c := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 5 * time.Second}, Options{})
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("%v (%+v)", err, c.Status())
	}
	if v := c.dial.protocol(); v != sessionProtocol {
		t.Errorf("the server spoke %s, want %s", v, sessionProtocol)
	}
}

// A prompt or resource a client asks a stateless-era upstream for goes with
// what that client can answer, as a tool call does, not with what Warden's
// own client could (it declares all).
func TestRequestsTellWhatTheCallerCanAnswer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	canSample := func(caps *mcp.ClientCapabilities) string { return fmt.Sprint(caps != nil && caps.Sampling != nil) }
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: canSample(req.ClientCapabilities())}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: canSample(req.ClientCapabilities())}}}, nil
	})
	up := fixture.ServeSDK(t, srv, &mcp.StreamableHTTPOptions{Stateless: true})
	conn := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{})
	defer conn.Stop()
	if err := conn.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cs := conn.link.live(); cs == nil || !stateless(cs) {
		t.Fatal("the test wants a stateless-era upstream")
	}
	for _, c := range []struct {
		caller *mcp.ClientCapabilities
		want   string
	}{{&mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}, "true"}, {&mcp.ClientCapabilities{}, "false"}, {nil, "false"}} {
		var prompt, resource string
		call := &Call{Origin: origin{c.caller, false}}
		p, err := conn.GetPrompt(context.Background(), call, &mcp.GetPromptParams{Name: "p"})
		if err == nil {
			prompt = p.Messages[0].Content.(*mcp.TextContent).Text
			var r *mcp.ReadResourceResult
			if r, err = conn.ReadResource(context.Background(), call, &mcp.ReadResourceParams{URI: "test://r"}); err == nil {
				resource = r.Contents[0].Text
			}
		}
		if err != nil || prompt != c.want || resource != c.want {
			t.Errorf("caller %+v: the upstream saw sampling %s (prompt) and %s (resource) (%v), want %s", c.caller, prompt, resource, err, c.want)
		}
	}
}

// A stateless-era upstream's calls take the direct path, as the SDK's
// client would send them (its server checks them: the Mcp-Method and
// Mcp-Name headers, the revision and capabilities in _meta), Warden's
// client info too, and answer as on the SDK's path: a plain result, a
// tool's error, the upstream's refusal of a caller who cannot answer, and
// questions over two rounds, which Warden answers and calls again with. A
// call abandoned is cancelled upstream, as the SDK's client does it.
func TestStatelessUpstreamOnBothPaths(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(args["x"])}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "broken"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return nil, nil, fmt.Errorf("the tool broke")
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "samples"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if caps := req.ClientCapabilities(); caps == nil || caps.Sampling == nil {
			return nil, nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required"}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "rounds"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if req.Params.RequestState == "" {
			return &mcp.CallToolResult{RequestState: "r1", InputRequests: mcp.InputRequestMap{"one": &mcp.ElicitParams{Message: "one?",
				RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"v": {Type: "string"}}}}}}, nil, nil
		}
		a, _ := req.Params.InputResponses["one"].(*mcp.ElicitResult)
		if a == nil {
			return nil, nil, fmt.Errorf("no answer")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Params.RequestState + "," + fmt.Sprint(a.Content["v"])}}}, nil, nil
	})
	release := make(chan struct{}) // the hanging calls, at the end
	mcp.AddTool(srv, &mcp.Tool{Name: "hangs"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return nil, nil, fmt.Errorf("released")
	})
	type seen struct {
		id, method, name, client string
	}
	var mu sync.Mutex
	var calls []seen
	cancelled := make(chan int, 4) // the statuses notifications/cancelled got
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			ID     json.RawMessage
			Method string
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
		}
		json.Unmarshal(body, &m)
		if m.Method == "tools/call" {
			var info mcp.Implementation
			json.Unmarshal(m.Params.Meta[mcp.MetaKeyClientInfo], &info)
			mu.Lock()
			calls = append(calls, seen{string(m.ID), r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name"), info.Name})
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &testenv.StatusWriter{ResponseWriter: w, Code: http.StatusOK}
		sdk.ServeHTTP(rec, r)
		if m.Method == "notifications/cancelled" {
			cancelled <- rec.Code
		}
	}))
	defer up.Close()
	defer close(release)

	results := map[bool][]string{}
	for _, noFast := range []bool{false, true} {
		var keysMu sync.Mutex
		var keys []string
		conn := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second},
			Options{Peer: elicitPeer{mu: &keysMu, keys: &keys}, NoFastPath: noFast})
		if err := conn.Ready(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		calls = nil
		mu.Unlock()
		for _, c := range []struct {
			tool   string
			args   any
			caller *mcp.ClientCapabilities
		}{
			{"echo", json.RawMessage(`{"x":"hi"}`), nil},
			{"echo", map[string]any{"x": 2}, nil},
			{"broken", json.RawMessage(`{}`), nil},
			{"samples", json.RawMessage(`{}`), &mcp.ClientCapabilities{}},
			{"samples", json.RawMessage(`{}`), &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}},
			{"rounds", json.RawMessage(`{}`), &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}},
		} {
			var got string
			err := conn.Do(context.Background(), func(ctx context.Context, cs *mcp.ClientSession) error {
				if v := cs.InitializeResult().ProtocolVersion; v != protocol.Newest {
					t.Fatalf("negotiated %s, want %s", v, protocol.Newest)
				}
				res, err := conn.callTool(ctx, cs, &Call{Params: &mcp.CallToolParams{Name: c.tool, Arguments: c.args}, Origin: origin{c.caller, true}})
				if err != nil {
					return err
				}
				d, err := res.Tool()
				if err != nil {
					return err
				}
				b, err := json.Marshal(d)
				got = string(b)
				return err
			})
			if err != nil { // the upstream's answer, as the gateway passes it on
				got = fmt.Sprintf("error: %+v", Answer(err))
			}
			results[noFast] = append(results[noFast], c.tool+" "+got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := conn.Do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
			_, err := conn.callTool(ctx, cs, &Call{Params: &mcp.CallToolParams{Name: "hangs", Arguments: json.RawMessage(`{}`)}})
			return err
		})
		cancel()
		if err == nil {
			t.Errorf("fast path off %v: an abandoned call answered", noFast)
		}
		select {
		case status := <-cancelled:
			if status != http.StatusAccepted {
				t.Errorf("fast path off %v: the cancellation was answered %d", noFast, status)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("fast path off %v: an abandoned call was not cancelled upstream", noFast)
		}
		conn.Stop()
		mu.Lock()
		for _, s := range calls {
			if s.method != "tools/call" || s.name == "" || s.client != "warden" {
				t.Errorf("fast path off %v: a call sent with Mcp-Method %q, Mcp-Name %q, client %q", noFast, s.method, s.name, s.client)
			}
			if direct := strings.HasPrefix(s.id, `"`+fastIDPrefix); direct == noFast {
				t.Errorf("fast path off %v: a call of id %s", noFast, s.id)
			}
		}
		if len(calls) != 8 { // rounds: two
			t.Errorf("fast path off %v: %d calls reached the upstream, want 8", noFast, len(calls))
		}
		mu.Unlock()
	}
	for i, direct := range results[false] {
		if sdk := results[true][i]; direct != sdk {
			t.Errorf("direct path: %s\nSDK path:    %s", direct, sdk)
		}
		for _, r := range []string{direct, results[true][i]} {
			if strings.Contains(r, "serverInfo") { // the upstream's name, which Warden's clients are not given
				t.Errorf("passed on with the upstream's name: %s", r)
			}
		}
	}
	if !strings.Contains(results[false][5], `r1,one?`) {
		t.Errorf("rounds: %s", results[false][5])
	}
}

// origin is a call's client as a test states it.
type origin struct {
	caps       *mcp.ClientCapabilities
	perRequest bool
}

func (o origin) Capabilities() *mcp.ClientCapabilities { return o.caps }
func (o origin) PerRequest() bool                      { return o.perRequest }
