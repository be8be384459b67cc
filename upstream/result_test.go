package upstream

import (
	"encoding/json"
	"testing"
)

// decodeMessage finds an answer's result where encoding/json would, without
// copying it.
func TestDecodeMessageResult(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"a \"}] b"}]}}`,
		` { "result" : [1, {"x": "}"}, "\\"] , "id" : "c1" , "jsonrpc":"2.0" } `,
		`{"id":"c1","Result":{"a":1},"result":{"b":[true,null,-1.5e3]}}`,
		`{"id":"c1","meta":{"result":0},"result":"s"}`,
		`{"id":"c1","res\u0075lt":{"escaped":true}}`,
		`{"id":"c1","error":{"code":-32602,"message":"bad"}}`,
	} {
		m, err := decodeMessage([]byte(in), "c1")
		var want rpcMessage
		if werr := json.Unmarshal([]byte(in), &want); err != nil || werr != nil {
			t.Fatalf("%s: %v %v", in, err, werr)
		}
		if string(m.Result) != string(want.Result) || string(m.ID) != string(want.ID) || (m.Error == nil) != (want.Error == nil) {
			t.Fatalf("%s: result %s id %s error %v; encoding/json: %s %s %v", in, m.Result, m.ID, m.Error, want.Result, want.ID, want.Error)
		}
	}
}
