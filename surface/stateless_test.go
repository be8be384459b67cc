package surface_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
)

// A client of the stateless era (2026-07-28) lists and calls as a 2025
// one does, and answers an upstream's questions over input-required
// rounds, while the call waits upstream.
func TestStatelessClient(t *testing.T) {
	fx, r := fixture.NewServer(fixture.Options{}), fixture.NewRich(t)
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}, "r": {"url": %q, "trusted": true}}`, fx.Serve(t), r.URL), 0, 0)
	e.WaitListed(t, "fx")
	e.WaitListed(t, "r")

	h := &heard{}
	c := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "1"}, answering(h))
	c.AddRoots(&mcp.Root{URI: "file:///client-root"})
	cs, err := c.Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("the client speaks %s; the test wants the stateless era", v)
	}
	waitTools(t, cs, "both servers' tools", func(n []string) bool { return has(n, "fx__write_value", "r__ask") })

	if out, isErr, _, err := callText(t, cs, "fx__write_value", map[string]any{"value": "stateless"}); err != nil || isErr || fx.Value("") != "stateless" {
		t.Fatalf("a write: %q %v (%v)", out, isErr, err)
	}
	if out, isErr, _, err := callText(t, cs, "r__ask", nil); err != nil || isErr || out != richAnswer {
		t.Fatalf("a call over rounds: %q %v (%v), want %q", out, isErr, err, richAnswer)
	}
	if fx.WriteDispatches() != 1 {
		t.Errorf("%d writes upstream, want 1", fx.WriteDispatches())
	}
	if _, _, _, err := callText(t, cs, "nosuch", nil); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("an unknown tool: %v", err)
	}
}

// resultText is the text of the tool result in an answer, JSON or one event.
func resultText(t *testing.T, body string) string {
	t.Helper()
	if i := strings.Index(body, "data: "); i >= 0 {
		body, _, _ = strings.Cut(body[i+len("data: "):], "\n")
	}
	var m struct {
		Result mcp.CallToolResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &m); err != nil || len(m.Result.Content) == 0 {
		t.Fatalf("no tool result in %s (%v)", body, err)
	}
	return m.Result.Content[0].(*mcp.TextContent).Text
}

// stateless are the headers of a stateless-era tools/call of tool.
func stateless(tool string) map[string]string {
	return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
}

// A request goes to the era it is of: by its Mcp-Protocol-Version header,
// or, without one, by the protocol version in its _meta (then the
// stateless handler says the header is missing); a request-state of a
// round that never was is refused.
func TestEraOfARawRequest(t *testing.T) {
	fx, r := fixture.NewServer(fixture.Options{}), fixture.NewRich(t)
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}, "r": {"url": %q, "trusted": true}}`, fx.Serve(t), r.URL), 0, 0)
	e.WaitListed(t, "fx")
	e.WaitListed(t, "r")
	url := e.URL + "/mcp"
	meta := `"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": {}}`

	// Stateless, with the header: answered on its own, no session.
	resp, body := rawPost(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__echo","arguments":{"x":1},`+meta+`}}`,
		stateless("fx__echo"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `{\"x\":1}`) || !strings.Contains(body, `"resultType":"complete"`) {
		t.Errorf("a stateless call: %d %s", resp.StatusCode, body)
	}

	// The hop's own _meta keys do not go upstream; others do, and Warden's
	// word of what the caller can answer (see upstream.askable).
	resp, body = rawPost(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"r__meta",`+
		strings.Replace(meta, `"_meta": {`, `"_meta": {"vendor/x": 1, `, 1)+`}}`, stateless("r__meta"))
	if keys := resultText(t, body); resp.StatusCode != http.StatusOK || keys != "io.modelcontextprotocol/clientCapabilities\nvendor/x" {
		t.Errorf("the upstream saw the _meta keys %q (%d %s); want vendor/x and the caller's capabilities, none of the hop's others", keys, resp.StatusCode, body)
	}

	// Without the header, the _meta tells the era.
	resp, body = rawPost(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{`+meta+`}}`, nil)
	if !strings.Contains(strings.ToLower(body), "mcp-protocol-version") {
		t.Errorf("a stateless request without its header: %d %s; want the stateless handler to ask for the header", resp.StatusCode, body)
	}

	// A request state Warden never gave.
	resp, body = rawPost(t, url, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fx__echo","requestState":"forged.1.AAAA",`+meta+`}}`, stateless("fx__echo"))
	if !strings.Contains(body, "requestState is not one Warden gave") {
		t.Errorf("a forged request state: %d %s", resp.StatusCode, body)
	}

	// A session-era initialize without the header goes to the session handler.
	resp, body = rawPost(t, url, `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Errorf("a 2025 initialize: %d %s", resp.StatusCode, body)
	}
}
