package surface_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
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
	servers := func() string {
		return fmt.Sprintf(`{"hb": {"url": %q, "trusted": true}, "fx": {"url": %q, "trusted": true}}`, headerBound(t), fixture.NewServer(fixture.Options{}).Serve(t))
	}
	fast, sdk := newEnv(t, servers(), 0, 0), newEnv(t, servers(), 0, 0)
	sdk.S.DisableFastPath()
	for _, e := range []*env{fast, sdk} {
		e.WaitListed(t, "hb")
		e.WaitListed(t, "fx")
	}

	meta := func(extra string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{}}` + extra + `}`
	}
	callID := func(id, tool, args, meta string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,` + meta + `}}`
	}
	call := func(tool, args, meta string) string { return callID("7", tool, args, meta) }
	with := func(h map[string]string, k, v string) map[string]string {
		h = maps.Clone(h)
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
		return h
	}
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	cases := []struct {
		name    string
		server  string // whose own endpoint
		body    string
		headers map[string]string
		fast    bool // answered by the fast path as JSON where the SDK streams
	}{
		{"a plain call", "hb", call("echo", `{"x":1}`, meta("")), stateless("echo"), true},
		{"a string id", "hb", callID(`"call-1"`, "echo", `{}`, meta("")), stateless("echo"), true},
		{"a 2025 upstream's result, which names no server", "fx", call("echo", `{}`, meta("")), stateless("echo"), true},
		{"an id with a fraction", "hb", callID("1.5", "echo", `{}`, meta("")), stateless("echo"), false},
		{"an id with an exponent", "hb", callID("1e2", "echo", `{}`, meta("")), stateless("echo"), false},
		{"an id of minus zero", "hb", callID("-0", "echo", `{}`, meta("")), stateless("echo"), false},
		{"an id beyond int64", "hb", callID("123456789012345678901", "echo", `{}`, meta("")), stateless("echo"), false},
		{"an id with an escape", "hb", callID(`"\u0041"`, "echo", `{}`, meta("")), stateless("echo"), false},
		{"arguments nested 1001 deep", "hb", call("echo", `{"x":`+deep+`}`, meta("")), stateless("echo"), false},
		{"a capability spelled in capitals", "hb", call("echo", `{}`, strings.Replace(meta(""), `"roots":{}`, `"Elicitation":{}`, 1)), stateless("echo"), false},
		{"a capability twice, once in capitals", "hb", call("echo", `{}`, strings.Replace(meta(""), `"roots":{}`, `"elicitation":{},"ELICITATION":null`, 1)), stateless("echo"), false},
		{"a Content-Type with a broken parameter", "hb", call("echo", `{}`, meta("")), with(stateless("echo"), "Content-Type", "application/json; charset"), false},
		{"an empty Last-Event-ID", "hb", call("echo", `{}`, meta("")), with(stateless("echo"), "Last-Event-ID", " "), false},
		{"a call of a tool unknown", "hb", call("nosuch", `{}`, meta("")), stateless("nosuch"), false},
		{"an upstream's JSON-RPC error", "hb", call("fail", `{}`, meta("")), stateless("fail"), true},
		{"a log level asked for", "hb", call("echo", `{}`, meta(`,"io.modelcontextprotocol/logLevel":"debug"`)), stateless("echo"), false},
		{"a progress token", "hb", call("echo", `{}`, meta(`,"progressToken":"p1"`)), stateless("echo"), false},
		{"no Mcp-Name", "hb", call("echo", `{}`, meta("")), with(stateless("echo"), "Mcp-Name", ""), false},
		{"another Mcp-Name", "hb", call("echo", `{}`, meta("")), stateless("fail"), false},
		{"another Mcp-Method", "hb", call("echo", `{}`, meta("")), with(stateless("echo"), "Mcp-Method", "tools/list"), false},
		{"_meta of another version", "hb", call("echo", `{}`, strings.Replace(meta(""), "2026-07-28", "2025-11-25", 1)), stateless("echo"), false},
		{"no capabilities", "hb", call("echo", `{}`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`), stateless("echo"), false},
		{"client info not an object", "hb", call("echo", `{}`, strings.Replace(meta(""), `{"name":"raw","version":"1"}`, `"raw"`, 1)), stateless("echo"), false},
		{"a header-bound argument, its header given", "hb", call("where", `{"region":"eu"}`, meta("")), with(stateless("where"), "Mcp-Param-Region", "eu"), false},
		{"a header-bound argument, its header missing", "hb", call("where", `{"region":"eu"}`, meta("")), stateless("where"), false},
	}
	for _, c := range cases {
		fr, fb := rawPost(t, fast.URL+"/mcp/"+c.server, c.body, c.headers)
		sr, sb := rawPost(t, sdk.URL+"/mcp/"+c.server, c.body, c.headers)
		if fr.StatusCode != sr.StatusCode || message(t, fb) != message(t, sb) {
			t.Errorf("%s: the fast paths answer %d %s\nthe SDK %d %s", c.name, fr.StatusCode, fb, sr.StatusCode, sb)
		}
		// A result names the server that answers the client: Warden, not
		// the upstream (hb names itself in its results).
		if m := message(t, fb); strings.Contains(m, `"result"`) && !strings.Contains(m, `"io.modelcontextprotocol/serverInfo":{"name":"warden"`) {
			t.Errorf("%s: a result that does not name Warden: %s", c.name, m)
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
// to the header Mcp-Param-Region (x-mcp-header), in the stateless era; it
// answers its URL.
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
	ts := fixture.ServeSDK(t, srv, &mcp.StreamableHTTPOptions{Stateless: true})
	return ts.URL
}

// FuzzStatelessCall posts whatever body as a stateless-era tools/call of
// echo, with the headers a well-behaved client sends or one of them
// otherwise (hdr picks which), to surfaces with the fast paths and to
// surfaces without: both give the same status and the same message.
func FuzzStatelessCall(f *testing.F) {
	servers := func() string { return fmt.Sprintf(`{"hb": {"url": %q, "trusted": true}}`, headerBound(f)) }
	fast, sdk := newEnv(f, servers(), 0, 0), newEnv(f, servers(), 0, 0)
	sdk.S.DisableFastPath()
	fast.WaitListed(f, "hb")
	sdk.WaitListed(f, "hb")
	variants := []map[string]string{
		{},
		{"Content-Type": "application/json; charset=utf-8"},
		{"Content-Type": "application/json; charset"},
		{"Content-Type": "Application/JSON"},
		{"Accept": "application/json"},
		{"Accept": "*/*"},
		{"Last-Event-ID": " "},
		{"Mcp-Name": "ECHO"},
		{"Mcp-Method": "tools/list"},
		{"Mcp-Protocol-Version": "2025-11-25"},
		{"Mcp-Param-Region": "x"},
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for i, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":[1,"2"]},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","requestState":"a.1.b",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","inputResponses":{"q":{}},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo",` + meta + `}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` + meta + `}}]`,
	} {
		for v := range variants {
			if v == 0 || v == i+1 {
				f.Add(uint8(v), []byte(seed))
			}
		}
	}
	f.Fuzz(func(t *testing.T, hdr uint8, body []byte) {
		headers := stateless("echo")
		maps.Copy(headers, variants[int(hdr)%len(variants)])
		fr, fb := rawPost(t, fast.URL+"/mcp/hb", string(body), headers)
		sr, sb := rawPost(t, sdk.URL+"/mcp/hb", string(body), headers)
		if fr.StatusCode != sr.StatusCode || message(t, fb) != message(t, sb) {
			t.Errorf("%q with %v: the fast paths answer %d %s\nthe SDK %d %s", body, headers, fr.StatusCode, fb, sr.StatusCode, sb)
		}
	})
}

// A tool binding an argument to a header is held whole by the view's SDK
// server, which refuses a call without that header; the other tools'
// stand-ins (view.go) bind none, so their calls go through without one.
func TestHeaderBoundCallNeedsItsHeader(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(`{"hb": {"url": %q, "trusted": true}}`, headerBound(t)), 0, 0)
	e.S.DisableFastPath()
	e.WaitListed(t, "hb")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, url := range []string{e.URL + "/mcp/hb", e.URL + "/mcp"} {
		name := "where"
		if strings.HasSuffix(url, "/mcp") {
			name = "hb__where"
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{"region":"eu"},` + meta + `}}`
		if r, b := rawPost(t, url, body, stateless(name)); r.StatusCode != http.StatusBadRequest || !strings.Contains(b, "Mcp-Param-Region") {
			t.Errorf("%s without its header: %d %s", url, r.StatusCode, b)
		}
		headers := stateless(name)
		headers["Mcp-Param-Region"] = "eu"
		if r, b := rawPost(t, url, body, headers); r.StatusCode != http.StatusOK || !strings.Contains(b, `{\"region\":\"eu\"}`) {
			t.Errorf("%s with its header: %d %s", url, r.StatusCode, b)
		}
	}
}
