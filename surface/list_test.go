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
)

// The fast path's tools/list, from the definitions encoded when they were
// listed, says what the view's SDK server says to the same request.
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
		encodeSchemas(def)
		v.unchanged("tool:"+name, def)
		if err := addTool(v.srv, def); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(newEndpoint(v.srv).sessions)
	defer srv.Close()
	session := post(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header.Get("Mcp-Session-Id")
	var sdk struct{ Result any }
	if err := json.Unmarshal(body(t, post(t, srv.URL, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)), &sdk); err != nil {
		t.Fatal(err)
	}
	var fast any
	if err := json.Unmarshal(v.toolList(), &fast); err != nil {
		t.Fatalf("fast list %s: %v", v.toolList(), err)
	}
	if !jsonEqual(fast, sdk.Result) {
		t.Fatalf("fast list\n%s\nSDK's\n%s", mustJSON(fast), mustJSON(sdk.Result))
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
