package surface_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/surface"
)

// found is one search_tools answer.
type found struct {
	Name, Server, Tool, Description string
	InputSchema                     map[string]any `json:"inputSchema"`
	Score                           float64
}

func search(t *testing.T, cs *mcp.ClientSession, args map[string]any) ([]found, string) {
	t.Helper()
	res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "search_tools", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("search_tools %v: %+v (%v)", args, res, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct{ Tools []found }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Tools, res.Content[0].(*mcp.TextContent).Text
}

// The search view shows two tools: search_tools finds the visible tools
// of every server by what they do, call_tool calls one of them through the
// same policy as a direct call.
func TestSearchView(t *testing.T) {
	fx, q := fixture.NewServer(fixture.Options{Instructions: "A key-value store."}), fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true, "tools": {"echo": {"hidden": true}}}, "q": {"url": %q}}`, fx.Serve(t), q.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	e.WaitListed(t, "q")
	cs := e.connect(t, "/mcp?view=search", nil, session2025)
	if names := toolNames(t, cs); !slices.Equal(names, []string{"call_tool", "search_tools"}) {
		t.Fatalf("the search view lists %v", names)
	}

	tools, text := search(t, cs, map[string]any{"query": "store a value under a key"})
	if len(tools) == 0 || tools[0].Name != "fx__write_value" || tools[0].Server != "fx" || tools[0].Tool != fixture.ToolWrite || tools[0].Score <= 0 ||
		tools[0].InputSchema["type"] != "object" {
		t.Fatalf("search for storing a value found %+v", tools)
	}
	// The text names each tool with its parameters, "?" marking optional ones.
	if !strings.Contains(text, "fx__write_value(fail?, key?, sleep_ms?, value) ") || !strings.Contains(text, "Store a value under a key.") ||
		!strings.Contains(text, "call one with call_tool") {
		t.Errorf("text answer %q", text)
	}
	for _, f := range tools {
		if f.Server == "q" || f.Tool == fixture.ToolEcho {
			t.Errorf("search found %s, which no agent may call", f.Name)
		}
	}
	if tools, _ := search(t, cs, map[string]any{"query": "value", "limit": 1}); len(tools) != 1 {
		t.Errorf("limit 1 found %d tools", len(tools))
	}
	if tools, _ := search(t, cs, map[string]any{"query": "value", "server": "nosuch"}); len(tools) != 0 {
		t.Errorf("search of a server that is not there found %+v", tools)
	}
	if tools, text := search(t, cs, map[string]any{"query": "zyxxy qwv"}); len(tools) != 0 || !strings.Contains(text, "no tool found") {
		t.Errorf("a search for nothing: %+v %q", tools, text)
	}
	for _, args := range []map[string]any{nil, {"query": "  "}, {"query": 5}} {
		if _, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "search_tools", Arguments: args}); err == nil || !strings.Contains(err.Error(), "search_tools needs") {
			t.Errorf("search_tools %v: %v; want an invalid-params error saying what it needs", args, err)
		}
	}

	// call_tool runs a found tool under the same policy.
	if out, isErr, _, err := callText(t, cs, "call_tool", map[string]any{"name": "fx__write_value", "arguments": map[string]any{"value": "via search"}}); err != nil || isErr || fx.Value("") != "via search" {
		t.Fatalf("call_tool fx__write_value: %q %v (%v)", out, isErr, err)
	}
	if out, _, _, err := callText(t, cs, "call_tool", map[string]any{"name": "fx__read_value", "arguments": nil}); err != nil || out != "via search" {
		t.Errorf("call_tool with null arguments: %q (%v)", out, err)
	}
	if _, _, code, err := callText(t, cs, "call_tool", map[string]any{"name": "q__echo"}); err != nil || code != "SERVER_QUARANTINED" {
		t.Errorf("call_tool of a quarantined server's tool: %q (%v)", code, err)
	}
	for _, args := range []map[string]any{nil, {"arguments": map[string]any{}}, {"name": 5}} {
		if _, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "call_tool", Arguments: args}); err == nil || !strings.Contains(err.Error(), "call_tool needs") {
			t.Errorf("call_tool %v: %v; want an invalid-params error saying what it needs", args, err)
		}
	}
	// The view's direct names are those of /mcp.
	if out, _, _, err := callText(t, cs, "fx__read_value", nil); err != nil || out != "via search" {
		t.Errorf("a direct call on the search view: %q (%v)", out, err)
	}
}

// Which view /mcp shows: ?view= decides; without it, a session stays on
// the view it began on, and a new one gets the configured default (Auto:
// search once the tools cost more than the budget).
func TestViewChoice(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{Tools: 20})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	isSearch := func(names []string) bool { return slices.Equal(names, []string{"call_tool", "search_tools"}) }
	all := e.connect(t, "/mcp", nil, session2025)
	waitTools(t, all, "every tool on /mcp", func(n []string) bool { return len(n) == 24 })

	e.S.SetToolSearch(surface.ToolSearch{Mode: config.ToolSearchOn})
	if names := toolNames(t, e.connect(t, "/mcp", nil, session2025)); !isSearch(names) {
		t.Errorf("with toolSearch on, a new session sees %v", names)
	}
	if names := toolNames(t, all); len(names) != 24 {
		t.Errorf("a session begun on every tool now sees %v", names)
	}
	if names := toolNames(t, e.connect(t, "/mcp?view=all", nil, session2025)); len(names) != 24 {
		t.Errorf("?view=all sees %d tools", len(names))
	}

	e.S.SetToolSearch(surface.ToolSearch{Mode: config.ToolSearchAuto, Budget: 1 << 20})
	if names := toolNames(t, e.connect(t, "/mcp", nil, session2025)); len(names) != 24 {
		t.Errorf("under the budget, a new session sees %d tools", len(names))
	}
	e.S.SetToolSearch(surface.ToolSearch{Mode: config.ToolSearchAuto, Budget: 10})
	if names := toolNames(t, e.connect(t, "/mcp", nil, session2025)); !isSearch(names) {
		t.Errorf("over the budget, a new session sees %v", names)
	}
	if surface.SearchViewTokens() <= 0 || surface.SearchViewTokens() > 1000 {
		t.Errorf("the search view costs %d tokens", surface.SearchViewTokens())
	}

	resp := e.get(t, "/mcp?view=bogus")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `no view named "bogus"`) {
		t.Errorf("?view=bogus: %d %q", resp.StatusCode, b)
	}
}
