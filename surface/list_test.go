package surface

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/canon"
)

// The fast path's tools/list, from the definitions encoded when they were
// listed, says what the view's SDK server says to the same request, which
// lists the definitions, not the stand-ins the SDK server holds (one of
// the tools binds an argument to a header: held whole).
func TestFastToolListIsTheSDKServers(t *testing.T) {
	v := newView(nil, "", slog.New(slog.DiscardHandler), "test")
	falseV := false
	for i, name := range []string{"zeta", "alpha", "mid_tool", "b<&>"} {
		def := &mcp.Tool{
			Name:        name,
			Title:       "Tool <" + name + ">",
			Description: fmt.Sprintf("Tool %d & more: <b>bold</b>, \u2028 and \"quotes\".", i),
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{
				"q": map[string]any{"type": "string", "description": "what"}, "n": map[string]any{"type": "integer", "minimum": 1},
			}, "required": []any{"q"}},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: i%2 == 0, DestructiveHint: &falseV},
		}
		if i == 1 {
			def.OutputSchema = map[string]any{"type": "object", "properties": map[string]any{"out": map[string]any{"type": "string"}}}
			def.Meta = mcp.Meta{"vendor/x": 1}
		}
		if i == 2 {
			def.InputSchema.(map[string]any)["properties"].(map[string]any)["q"].(map[string]any)["x-mcp-header"] = "Q"
		}
		if i == 1 || i == 3 { // listed as the tool's execution, not in its _meta
			if def.Meta == nil {
				def.Meta = mcp.Meta{}
			}
			def.Meta[gateway.MetaExecution] = map[string]any{"taskSupport": "optional"}
		}
		if err := v.show(def); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(newEndpoint(v.srv).sessions)
	defer srv.Close()
	defer v.closeAll() // the session opened below
	session := post(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header.Get("Mcp-Session-Id")
	var sdk struct{ Result any }
	if err := json.Unmarshal(body(t, post(t, srv.URL, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)), &sdk); err != nil {
		t.Fatal(err)
	}
	var fast any
	if err := json.Unmarshal(v.toolList(nil), &fast); err != nil {
		t.Fatalf("fast list %s: %v", v.toolList(nil), err)
	}
	if !jsonEqual(fast, sdk.Result) {
		t.Fatalf("fast list\n%s\nSDK's\n%s", mustJSON(fast), mustJSON(sdk.Result))
	}
	listed := string(v.toolList(nil))
	if strings.Count(listed, `"execution":{"taskSupport":"optional"}`) != 2 || strings.Contains(listed, gateway.MetaExecution) || !strings.Contains(listed, `"vendor/x":1`) {
		t.Errorf("listed %s: want two tools' execution, not in _meta, other _meta kept", listed)
	}
}

func post(t *testing.T, url, session, msg string) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// body is a response's JSON message, also when sent as an event.
func body(t *testing.T, resp *http.Response) []byte {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return b
	}
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return []byte(data)
		}
	}
	t.Fatalf("no message in %q", b)
	return nil
}

func mustJSON(x any) string {
	b, _ := json.MarshalIndent(x, "", "  ")
	return string(b)
}

// A tool whose input is not an object, whose schema cannot be encoded, or
// whose x-mcp-header annotations the SDK refuses is not shown; nothing of
// it stays listed, nor the definition it had before.
func TestInvalidToolNotShown(t *testing.T) {
	v := newView(nil, "", slog.New(slog.DiscardHandler), "test")
	for name, schema := range map[string]any{
		"array":            map[string]any{"type": "array"},
		"none":             nil,
		"typeless":         map[string]any{"properties": map[string]any{}},
		"array-bound":      map[string]any{"type": "array", "properties": map[string]any{"q": map[string]any{"type": "string", "x-mcp-header": "Q"}}},
		"not-json":         json.RawMessage(`{"type":`),
		"type-in-capitals": map[string]any{"TYPE": "object"},
		"raw-in-capitals":  json.RawMessage(`{"TYPE":"object"}`),
		// The SDK refuses it when it is added: x-mcp-header on an array.
		"array-header": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "array", "x-mcp-header": "Q"}}},
	} {
		if err := v.show(&mcp.Tool{Name: name, InputSchema: schema}); err == nil {
			t.Errorf("%s: shown", name)
		}
		if v.listed["tool:"+name] != nil || v.defs[name] != nil {
			t.Errorf("%s: still listed", name)
		}
	}
	if err := v.show(&mcp.Tool{Name: "raw", InputSchema: json.RawMessage(`{"type":"object"}`)}); err != nil || v.defs["raw"] == nil {
		t.Errorf("a valid schema as JSON: %v", err)
	}
	// Shown, then changed into one the SDK refuses: neither stays.
	if err := v.show(&mcp.Tool{Name: "raw", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"object","x-mcp-header":"Q"}}}`)}); err == nil {
		t.Error("an invalid change: shown")
	}
	if v.listed["tool:raw"] != nil || v.defs["raw"] != nil {
		t.Error("an invalid change: the valid definition before it still listed")
	}
}

// BenchmarkShow lists 462 tools of real-world-sized schemas on a new view,
// as at start: the CPU and memory of the views' part of a start.
//
//	go test -run '^$' -bench BenchmarkShow -benchmem ./surface/
func BenchmarkShow(b *testing.B) {
	schema, err := canon.JSON([]byte(benchSchema)) // as upstream keeps it
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		v := newView(nil, "", slog.New(slog.DiscardHandler), "test")
		for i := range 462 {
			def := &mcp.Tool{Name: fmt.Sprintf("s%d__tool_%04d", i%28, i), Description: "Generated tool.", InputSchema: canon.Raw(schema),
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
			if err := v.show(def); err != nil {
				b.Fatal(err)
			}
		}
	}
}

const benchSchema = `{"type":"object","required":["query"],"properties":{
"query":{"type":"string","description":"What to look for, in the search syntax of the service: words, quoted phrases, field:value filters."},
"owner":{"type":"string","description":"The account or organisation that owns the item, as shown in its address."},
"limit":{"type":"integer","minimum":1,"maximum":100,"default":30,"description":"How many results to return at most."},
"order":{"type":"string","enum":["created","updated","relevance"],"description":"How to sort the results."},
"filter":{"type":"object","properties":{"labels":{"type":"array","items":{"type":"string"},"description":"Only items with all these labels."},"state":{"type":"string","description":"open, closed or all."}}}}}`
