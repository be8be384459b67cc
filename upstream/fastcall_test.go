package upstream

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hand-written tools/call request says what encoding/json would.
func TestCallRequestMatchesEncoding(t *testing.T) {
	for _, p := range []*mcp.CallToolParams{
		{Name: "echo", Arguments: json.RawMessage(`{"payload": "a\nb", "n": [1, 2]}`)},
		{Name: `we"ird\name ✓`, Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{"progressToken": "w-1", "x": map[string]any{"y": 1.0}}},
		{Name: "noargs"},
		{Name: "decoded", Arguments: map[string]any{"k": "v"}},
	} {
		got, err := callRequest("w1-2", p)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "w1-2", "method": "tools/call", "params": p})
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: not JSON: %v", got, err)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("request\n got %s\nwant %s", got, want)
		}
	}
}

// Whether a result asks for input instead is read as isError is: a result
// that says so, or has questions and says nothing (a 2025 server's).
func TestRawResultReadsAsks(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"content":[],"inputRequests":{"a":{"method":"roots/list"}},"requestState":"s"}`: true,
		`{"resultType":"input_required","inputRequests":{}}`:                              true,
		`{"resultType":"input_required","requestState":"later"}`:                          true, // busy: call again
		`{"content":[{"type":"text","text":"input_required"}]}`:                           false,
		`{"content":[],"inputRequests":{}}`:                                               false,
		`{"content":[{"type":"text","text":"\"inputRequests\":{\"a\":1}"}]}`:              false,
		`{"content":[], "\u0069nputRequests": {"a": {}}}`:                                 true,
		`{"content":[], "InputRequests": {"a": {}}, "RESULTTYPE": "input_required"}`:      false,
	} {
		if _, asks, err := rawResult(json.RawMessage(raw)); err != nil || asks != want {
			t.Errorf("%s: asks %v (%v), want %v", raw, asks, err, want)
		}
	}
}

// isError is read without decoding the whole result, and never missed.
func TestRawResultReadsIsError(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"content":[{"type":"text","text":"isError"}]}`:                    false,
		`{"content":[],"isError":true}`:                                     true,
		`{"content":[],"isError":false}`:                                    false,
		`{"content":[{"type":"text","text":"\"isError\":true"}]}`:           false,
		`{"content":[], "\u0069sError": true}`:                              true,
		`{"content":[], "IsError": true}`:                                   false, // keys are case-sensitive, as the SDK reads them
		`{"content":[], "ISERROR": true}`:                                   false,
		`{"content":[], "ISERROR": false, "isError": true}`:                 true,
		`{"structuredContent":{"isError":true},"content":[]}`:               false,
		`{"content":[{"type":"text","text":"x"}],"_meta":{"isError":true}}`: false,
	} {
		res, asks, err := rawResult(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if res.IsError != want || asks || string(res.Raw) != raw {
			t.Errorf("%s: isError %v, raw %s", raw, res.IsError, res.Raw)
		}
	}
	for _, bad := range []string{`null`, `[]`, `"x"`} {
		if _, _, err := rawResult(json.RawMessage(bad)); err == nil {
			t.Errorf("result %s accepted", bad)
		}
	}
}
