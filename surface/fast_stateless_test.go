package surface_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stateless fast path (fast_stateless.go) takes only the calls the
// SDK's stateless handler would take without a word, and answers them as
// it would. Each request below goes to surfaces with the fast paths and to
// surfaces without them, over upstreams alike: both give the same status
// and the same JSON-RPC message, whatever the framing. The plain calls are
// answered by the fast path (as JSON, where the SDK sends an event
// stream); the others are left to the SDK (the same framing on both). An
// error the era gives a status of its own (an unknown tool: 400) is JSON
// on both paths.
func TestStatelessFastPathAnswersAsTheSDK(t *testing.T) {
	fast, sdk := newEnv(t, headerBound(t), 0, 0), newEnv(t, headerBound(t), 0, 0)
	sdk.S.DisableFastPath()
	fast.WaitListed(t, "hb")
	sdk.WaitListed(t, "hb")

	meta := func(extra string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{}}` + extra + `}`
	}
	call := func(tool, args, meta string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` + meta + `}}`
	}
	with := func(h map[string]string, k, v string) map[string]string {
		h = maps.Clone(h)
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	cases := []struct {
		name    string
		body    string
		headers map[string]string
		fast    bool // answered by the fast path as JSON where the SDK streams
	}{
		{"a plain call", call("echo", `{"x":1}`, meta("")), stateless("echo"), true},
		{"a call of a tool unknown", call("nosuch", `{}`, meta("")), stateless("nosuch"), false},
		{"an upstream's JSON-RPC error", call("fail", `{}`, meta("")), stateless("fail"), true},
		{"a log level asked for", call("echo", `{}`, meta(`,"io.modelcontextprotocol/logLevel":"debug"`)), stateless("echo"), false},
		{"a progress token", call("echo", `{}`, meta(`,"progressToken":"p1"`)), stateless("echo"), false},
		{"no Mcp-Name", call("echo", `{}`, meta("")), with(stateless("echo"), "Mcp-Name", ""), false},
		{"another Mcp-Name", call("echo", `{}`, meta("")), stateless("fail"), false},
		{"another Mcp-Method", call("echo", `{}`, meta("")), with(stateless("echo"), "Mcp-Method", "tools/list"), false},
		{"_meta of another version", call("echo", `{}`, strings.Replace(meta(""), "2026-07-28", "2025-11-25", 1)), stateless("echo"), false},
		{"no capabilities", call("echo", `{}`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), stateless("echo"), false},
		{"client info not an object", call("echo", `{}`, strings.Replace(meta(""), `{"name":"raw","version":"1"}`, `"raw"`, 1)), stateless("echo"), false},
		{"a header-bound argument, its header given", call("where", `{"region":"eu"}`, meta("")), with(stateless("where"), "Mcp-Param-Region", "eu"), false},
		{"a header-bound argument, its header missing", call("where", `{"region":"eu"}`, meta("")), stateless("where"), false},
	}
	for _, c := range cases {
		fr, fb := rawPost(t, fast.URL+"/mcp/hb", c.body, c.headers)
		sr, sb := rawPost(t, sdk.URL+"/mcp/hb", c.body, c.headers)
		if fr.StatusCode != sr.StatusCode || message(t, fb) != message(t, sb) {
			t.Errorf("%s: the fast paths answer %d %s\nthe SDK %d %s", c.name, fr.StatusCode, fb, sr.StatusCode, sb)
		}
		ft, st := fr.Header.Get("Content-Type"), sr.Header.Get("Content-Type")
		if taken := ft != st; taken != c.fast {
			t.Errorf("%s: answered as %s by the fast paths, %s by the SDK: taken by the fast path %v, want %v", c.name, ft, st, taken, c.fast)
		}
	}
}

// message is the JSON-RPC message of an answer (JSON, or the last event of
// a stream), in a canonical form; a body that is not JSON stays as it is.
func message(t *testing.T, body string) string {
	t.Helper()
	if i := strings.LastIndex(body, "data: "); i >= 0 {
		body, _, _ = strings.Cut(body[i+len("data: "):], "\n")
	}
	var m any
	if json.Unmarshal([]byte(body), &m) != nil {
		return body
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// headerBound serves a Go SDK server ("hb") of three tools: echo, fail
// (a JSON-RPC error of its own) and where, whose argument region is bound
// to the header Mcp-Param-Region (x-mcp-header); it answers the servers'
// JSON of a config.
func headerBound(t testing.TB) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hb", Version: "1"}, nil)
	echo := func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(r.Params.Arguments)}}}, nil
	}
	object := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: object}, echo)
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: object}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32042, Message: "the upstream says no"}
	})
	srv.AddTool(&mcp.Tool{Name: "where", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}, echo)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	return fmt.Sprintf(`{"hb": {"url": %q, "trusted": true}}`, ts.URL)
}

// FuzzStatelessCall posts whatever body as a stateless-era tools/call of
// echo, to surfaces with the fast paths and to surfaces without: both give
// the same status and the same message.
func FuzzStatelessCall(f *testing.F) {
	fast, sdk := newEnv(f, headerBound(f), 0, 0), newEnv(f, headerBound(f), 0, 0)
	sdk.S.DisableFastPath()
	fast.WaitListed(f, "hb")
	sdk.WaitListed(f, "hb")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,"2"]},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","requestState":"a.1.b",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","inputResponses":{"q":{}},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo",` + meta + `}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + meta + `}}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fr, fb := rawPost(t, fast.URL+"/mcp/hb", string(body), stateless("echo"))
		sr, sb := rawPost(t, sdk.URL+"/mcp/hb", string(body), stateless("echo"))
		if fr.StatusCode != sr.StatusCode || message(t, fb) != message(t, sb) {
			t.Errorf("%q: the fast paths answer %d %s\nthe SDK %d %s", body, fr.StatusCode, fb, sr.StatusCode, sb)
		}
	})
}
