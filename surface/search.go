package surface

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/search"
	"github.com/wardenmcp/warden/writes"
)

// The search view (/mcp?view=search) is the aggregated view with its
// visible tools put into a search index instead of tools/list: clients see
// search_tools and call_tool, and pay for two definitions, not every one.
// A tool reaches the index by the same per-server rebuild that lists it
// elsewhere, so only tools an agent could call are ever found; call_tool is
// the view's ordinary call path, so policy, activity and refusals are those
// of a direct call.

const (
	searchToolsName = "search_tools"
	callToolName    = "call_tool"
	defaultLimit    = 10
	maxLimit        = 50
)

var searchViewTools = []*mcp.Tool{{
	Name:        searchToolsName,
	Title:       "Search tools",
	Description: "Find the tools for a task among every server's tools. Answers the best matches first, each with its name, description and inputSchema; call one with call_tool.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"what you want to do, in words"},` +
		`"limit":{"type":"integer","minimum":1,"maximum":50,"default":10,"description":"how many tools to answer"},` +
		`"server":{"type":"string","description":"only this server's tools"}},"required":["query"]}`),
	Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
}, {
	Name:        callToolName,
	Title:       "Call a tool",
	Description: "Call a tool found with search_tools, by its name, with arguments that match its inputSchema. Answers what the tool answers.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","description":"the tool's name as search_tools gave it (server__tool)"},` +
		`"arguments":{"type":"object","description":"the tool's arguments"}},"required":["name"]}`),
	// It may answer a task handle: when the tool it calls runs as a task
	// (see taskCall).
	Meta: mcp.Meta{gateway.MetaExecution: map[string]any{"taskSupport": "optional"}},
}}

// SearchViewTokens is what the search view's tool list costs a client's
// context: bytes of its JSON definitions / 4, as for every view.
func SearchViewTokens() int {
	n := 0
	for _, t := range searchViewTools {
		b, _ := json.Marshal(t)
		n += len(b)
	}
	return n / 4
}

func newSearchView(g *gateway.Gateway, log *slog.Logger, version string) *view {
	v := newView(g, "", log, version)
	v.surface = "mcp?view=search"
	v.log = v.log.With("view", "search")
	v.index = search.New()
	for _, t := range searchViewTools {
		t := *t // the SDK server keeps it
		if err := addTool(v.srv, &t); err != nil {
			panic(err) // fixed definitions
		}
	}
	return v
}

// searchCall answers search_tools, or unwraps call_tool into the call it
// carries; other names are left as they are.
// client is the caller, which may be asked to rerank (rerank.go).
func (v *view) searchCall(ctx context.Context, p *mcp.CallToolParamsRaw, client gateway.Client, profile *callers.Profile) (*answer.Result, *mcp.CallToolParamsRaw, error) {
	switch p.Name {
	case searchToolsName:
		var a struct {
			Query  string `json:"query"`
			Limit  *int   `json:"limit"`
			Server string `json:"server"`
		}
		if err := unmarshalArgs(p.Arguments, &a); err != nil || strings.TrimSpace(a.Query) == "" {
			return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `search_tools needs arguments {"query": "what you want to do"} (and optionally "limit", "server")`}
		}
		limit := defaultLimit
		if a.Limit != nil {
			limit = min(max(*a.Limit, 1), maxLimit)
		}
		return answer.Decoded(v.searchResult(ctx, client, a.Query, a.Server, limit, profile)), nil, nil
	case callToolName:
		name, args, err := unwrapCall(p.Arguments)
		if err != nil {
			return nil, nil, err
		}
		return nil, &mcp.CallToolParamsRaw{Meta: p.Meta, Name: name, Arguments: args}, nil
	}
	return nil, p, nil
}

// unwrapCall reads call_tool's arguments: the tool it calls, and with what.
func unwrapCall(raw json.RawMessage) (name string, args json.RawMessage, err error) {
	var a struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := unmarshalArgs(raw, &a); err != nil || a.Name == "" {
		return "", nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `call_tool needs arguments {"name": "server__tool", "arguments": {...}}; find names with search_tools`}
	}
	if string(a.Arguments) == "null" {
		a.Arguments = nil
	}
	return a.Name, a.Arguments, nil
}

func unmarshalArgs(raw json.RawMessage, into any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	return json.Unmarshal(raw, into)
}

// foundTool is one search_tools answer, as PRODUCT.md fixes it.
type foundTool struct {
	Name        string               `json:"name"`
	Server      string               `json:"server"`
	Tool        string               `json:"tool"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description,omitempty"`
	InputSchema any                  `json:"inputSchema"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
	Score       float64              `json:"score"`
}

// indexed is a search document's payload: the tool, and its class for the
// caller's profile.
type indexed struct {
	def   *mcp.Tool
	class writes.Class
}

// searchResult answers search_tools: the tools profile allows (nil: all),
// in the order client's model gives them when reranking is on.
func (v *view) searchResult(ctx context.Context, client gateway.Client, query, server string, limit int, profile *callers.Profile) *mcp.CallToolResult {
	var keep func(*search.Doc) bool
	if profile != nil {
		keep = func(d *search.Doc) bool { return profile.Allows(d.Server, d.Tool, d.Payload.(indexed).class) }
	}
	reranking := v.toolSearch != nil && v.toolSearch.Load().Rerank == config.RerankSampling
	n := limit
	if reranking {
		n = max(limit, rerankCandidates)
	}
	hits := v.index.Search(query, server, n, keep)
	var note *rerankNote
	if reranking {
		var rn rerankNote
		hits, rn = rerank(ctx, client, query, hits)
		hits, note = hits[:min(len(hits), limit)], &rn
	}
	found := make([]foundTool, 0, len(hits))
	var text strings.Builder
	for _, h := range hits {
		t := h.Doc.Payload.(indexed).def
		f := foundTool{
			Name: h.Doc.Key, Server: h.Doc.Server, Tool: h.Doc.Tool, Title: h.Doc.Title, Description: t.Description,
			InputSchema: t.InputSchema, Annotations: t.Annotations, Score: math.Round(h.Score*1000) / 1000,
		}
		found = append(found, f)
		fmt.Fprintf(&text, "%s(%s) %.3f: %s\n", f.Name, paramList(h.Doc.Params, t.InputSchema), f.Score, firstLine(f.Description, 160))
	}
	if len(found) == 0 {
		text.WriteString("no tool found; try other words, or leave out \"server\"\n")
	} else {
		text.WriteString(`call one with call_tool {"name": "<name>", "arguments": {...}}` + "\n")
	}
	switch {
	case note == nil:
	case note.Reranked:
		text.WriteString("ordered by your model\n")
	default:
		fmt.Fprintf(&text, "in the index's order, not your model's: %s\n", note.Reason)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text.String()}},
		StructuredContent: searchAnswer{found, note},
	}
}

// searchAnswer is search_tools' structured content; what it says of its
// order only when reranking is on.
type searchAnswer struct {
	Tools []foundTool `json:"tools"`
	*rerankNote
}

// paramList names a tool's parameters for the text form, "?" marking the
// optional ones.
func paramList(params []search.Param, schema any) string {
	req := map[string]bool{}
	if s, ok := schemaOf(schema); ok {
		for _, r := range s.Required {
			req[r] = true
		}
	}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.Name
		if !req[p.Name] {
			names[i] += "?"
		}
	}
	return strings.Join(names, ", ")
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

type inputSchema struct {
	Properties map[string]schemaParam `json:"properties"`
	Required   []string               `json:"required"`
}

type schemaParam struct {
	Description string `json:"description"`
}

// schemaOf reads the parameters of a tool's input schema: as the SDK
// decoded it (a map) directly, for re-indexing speed; otherwise through
// JSON.
func schemaOf(schema any) (inputSchema, bool) {
	var s inputSchema
	if m, ok := schema.(map[string]any); ok {
		props, _ := m["properties"].(map[string]any)
		s.Properties = make(map[string]schemaParam, len(props))
		for name, p := range props {
			pm, _ := p.(map[string]any)
			d, _ := pm["description"].(string)
			s.Properties[name] = schemaParam{d}
		}
		req, _ := m["required"].([]any)
		for _, r := range req {
			if r, ok := r.(string); ok {
				s.Required = append(s.Required, r)
			}
		}
		return s, true
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return s, false
	}
	return s, json.Unmarshal(b, &s) == nil
}

// searchDoc is what the index knows of a visible tool; instructions are
// its server's.
func searchDoc(server, name, instructions string, t *mcp.Tool, class writes.Class) search.Doc {
	d := search.Doc{Key: name, Server: server, Tool: t.Name, Title: t.Title, Description: t.Description, Context: instructions, Payload: indexed{t, class}}
	if d.Title == "" && t.Annotations != nil {
		d.Title = t.Annotations.Title
	}
	if s, ok := schemaOf(t.InputSchema); ok {
		for p, prop := range s.Properties {
			d.Params = append(d.Params, search.Param{Name: p, Description: prop.Description})
		}
		slices.SortFunc(d.Params, func(a, b search.Param) int { return strings.Compare(a.Name, b.Name) })
	}
	return d
}

// tokens estimates what the tools this view lists cost a client's context:
// bytes of their JSON definitions over 4, the usual rule of thumb for
// English and JSON with BPE tokenizers.
func (v *view) tokens() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for key, def := range v.listed {
		if strings.HasPrefix(key, "tool:") {
			n += len(def)
		}
	}
	return n / 4
}
