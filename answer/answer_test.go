package answer

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A raw result is written as the upstream sent it, byte for byte, and
// decoded only when asked; a decoded one is encoded.
func TestResultRawOrDecoded(t *testing.T) {
	raw := json.RawMessage(`{"content":[{"type":"text","text":"hi"}], "isError" :true}`)
	r := &Result{Raw: raw}
	if b, err := r.MarshalJSON(); err != nil || string(b) != string(raw) {
		t.Fatalf("raw result written as %s (%v), want %s", b, err, raw)
	}
	d, err := r.Tool()
	if err != nil || !d.IsError || d.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("decoded %+v, %v", d, err)
	}
	if d2, _ := r.Tool(); d2 != d {
		t.Fatal("decoded twice")
	}
	if _, err := (&Result{Raw: json.RawMessage(`[]`)}).Tool(); err == nil {
		t.Fatal("a result that is not an object decoded")
	}
	r = Decoded(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no"}}})
	if !r.IsError {
		t.Fatal("Decoded lost isError")
	}
	if b, err := json.Marshal(r); err != nil || string(b) != `{"content":[{"type":"text","text":"no"}],"isError":true}` {
		t.Fatalf("decoded result written as %s (%v)", b, err)
	}
}

// Run does each piece of work left once, in the order it was left.
func TestAfterRunsOnce(t *testing.T) {
	var a After
	var done []int
	a.Add(func() { done = append(done, 1) })
	a.Add(func() { done = append(done, 2) })
	a.Run()
	a.Run()
	if len(done) != 2 || done[0] != 1 || done[1] != 2 {
		t.Fatalf("work done %v, want [1 2]", done)
	}
}

// MayHold finds a key in any case, at any depth, spelled with escapes or
// not; a value's text that only mentions it does not count, nor do other
// escapes (a Go server's \u003c, a Python one's for every non-ASCII
// letter).
func TestMayHold(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"content":[],"_meta":{}}`:                                                                     true,
		`{"content":[],"_META":{}}`:                                                                     true,
		`{"a":{"b":[{"resultType":"x"}]}}`:                                                              true,
		`{"content":[],"\u005fmeta":{}}`:                                                                true,
		`{"content":[],"re\u0073ultType":"x"}`:                                                          true,
		"{\"content\":[],\"re\u017fultType\":\"x\"}":                                                    true, // ſ folds to s
		`{"content":[{"type":"text","text":"resultType"}]}`:                                             true, // a value: counted, to be safe
		`{"content":[{"type":"text","text":"\"_meta\": {}"}]}`:                                          false,
		`{"content":[{"type":"text","text":"the \"resultType\""}]}`:                                     false,
		`{"content":[{"type":"text","text":"a \u003cb\u003e tag"}]}`:                                    false,
		`{"content":[{"type":"text","text":"caf\u00e9 au lait, \u003cb\u003e and more that is long"}]}`: false,
		`{"content":[],"\u005f\u006d\u0065\u0074\u0061":1}`:                                             true,
		`{"content":[{"type":"text","text":"\\"},{"x":"_meta"}]}`:                                       true, // the escape ends at \\
		`{"content":[],"metadata":{},"result":1}`:                                                       false,
		`{}`: false,
		"{\"content\":[],\"re\u017fult\\u0054ype\":1}":                                    true, // ſ as it is, T escaped
		`{"content":[],"\u0072\u0065\u0073\u0075\u006c\u0074\u0054\u0079\u0070\u0065":1}`: true,
		`{"content":[{"type":"text","text":"line\nline\nline\nline\nline"}]}`:             false,
	} {
		if got := MayHold([]byte(raw), "_meta", "resultType"); got != want {
			t.Errorf("%s: %v, want %v", raw, got, want)
		}
	}
}

// Only a result as sent whose resultType is "task", with a task id, is an
// upstream's task handle.
func TestTaskHandle(t *testing.T) {
	for raw, want := range map[string]string{
		`{"resultType":"task","taskId":"T1","status":"working"}`: "T1",
		`{"resultType":"complete","taskId":"T1"}`:                "",
		`{"resultType":"task"}`:                                  "",
		`{"content":[{"type":"text","text":"resultType task"}]}`: "",
	} {
		id, ok := (&Result{Raw: json.RawMessage(raw)}).TaskHandle()
		if id != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", raw, id, ok, want)
		}
	}
	if _, ok := Decoded(&mcp.CallToolResult{}).TaskHandle(); ok {
		t.Error("a decoded result is a task handle")
	}
}
