package upstream

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
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

// A result passed on is the upstream's but for the upstream's name in
// _meta, which is cut from the bytes whatever way it is written; decoded,
// the result is the upstream's less that one key, and its other _meta
// keys, flags and content stay.
func TestRawResultWithoutServerInfo(t *testing.T) {
	for _, c := range serverInfoCases {
		res, asks, err := rawResult(json.RawMessage(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		checkPassedOn(t, []byte(c.in), res, asks)
		want := c.want
		if want == "" {
			want = strings.NewReplacer(upInfo+",", "", ","+upInfo, "", upInfo, "").Replace(c.in)
		}
		if string(res.Raw) != want {
			t.Errorf("%s: passed on as %s, want %s", c.in, res.Raw, want)
		}
	}
}

const upInfo = `"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}`

// serverInfoCases are results and what is passed on of them ("": the
// same less upInfo).
var serverInfoCases = []struct{ in, want string }{
	{`{"content":[{"type":"text","text":"hi"}]}`, ""},
	{`{"content":[],"_meta":{` + upInfo + `}}`, ""},
	{`{"_meta":{"a":1,` + upInfo + `,"b":{"c":[2]}} , "content":[{"type":"text","text":"x \\\" }"}],"isError":true}`, ""},
	{`{"content":[],"_meta":{"a":"io.modelcontextprotocol/serverInfo"}}`, ""},
	{`{"content":[],"_META":{` + upInfo + `,"k":"v"}}`, ""},
	{`{"content":[],"_meta":null}`, ""},
	{`{"content":[],"\u005fmeta":{` + upInfo + `}}`, ""},
	{`{"content":[],"_meta":{` + upInfo + `},"_meta":{"k":1,` + upInfo + `}}`, ""},
	{`{"content":[],"_meta":{"io.modelcontextprotocol\/serverInfo":{"name":"up"},"k":1}}`, `{"content":[],"_meta":{"k":1}}`},
	{`{"_meta":{"io.modelcontextprotocol\/serverInfo":1},"ISERROR":true}`, `{"_meta":{},"ISERROR":true}`},
	{"{ \"_meta\" : { \"a\" : 1 ,\n " + upInfo + " , \"b\":[ ] } , \"content\":[] }", "{ \"_meta\" : {\"a\" : 1,\"b\":[ ]} , \"content\":[] }"},
	{`{"content":[],"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}}},"_meta":{` + upInfo + `}}`, ""},
}

// checkPassedOn fails unless res, decoded, is in (a tool result) decoded
// without the upstream's name, with the same flags.
func checkPassedOn(t *testing.T, in []byte, res *answer.Result, asks bool) {
	t.Helper()
	var got, want mcp.CallToolResult
	if err := json.Unmarshal(res.Raw, &got); err != nil {
		t.Fatalf("%s: passed on as %s: %v", in, res.Raw, err)
	}
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	delete(want.Meta, mcp.MetaKeyServerInfo)
	g, _ := json.Marshal(&got)
	w, _ := json.Marshal(&want)
	var flags struct { // as encoding/json reads them (the SDK's decoder minds case)
		IsError       bool                       `json:"isError"`
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	if err := json.Unmarshal(in, &flags); err != nil {
		t.Fatal(err)
	}
	wantAsks := flags.ResultType == "input_required" || len(flags.InputRequests) > 0
	if _, named := got.Meta[mcp.MetaKeyServerInfo]; named || string(g) != string(w) || res.IsError != flags.IsError || asks != wantAsks {
		t.Errorf("%s: passed on as %s (isError %v, asks %v), want %s", in, res.Raw, res.IsError, asks, w)
	}
}

// FuzzRawResult: whatever a tool result holds, it is passed on as it came
// but for the upstream's name, and its flags are read as encoding/json
// reads them.
func FuzzRawResult(f *testing.F) {
	for _, c := range serverInfoCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var d mcp.CallToolResult
		if len(in) == 0 || in[0] != '{' || !json.Valid(in) || json.Unmarshal(in, &d) != nil {
			t.Skip("not a tool result")
		}
		res, asks, err := rawResult(bytes.Clone(in)) // it writes over what it is given
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		checkPassedOn(t, in, res, asks)
	})
}
