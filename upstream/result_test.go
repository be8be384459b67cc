package upstream

import (
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
// _meta, which is taken out whatever way it is written: decoded, the
// result is the upstream's less that one key, and its other _meta keys,
// flags and content stay.
func TestRawResultWithoutServerInfo(t *testing.T) {
	for _, c := range serverInfoCases {
		res, asks, err := rawResult(json.RawMessage(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if strings.Contains(string(res.Raw), `"name":"up"`) {
			t.Errorf("%s: passed on as %s", c.in, res.Raw)
		}
		checkPassedOn(t, []byte(c.in), res, asks)
		if cut := strings.NewReplacer(upInfo+",", "", ","+upInfo, "", upInfo, "").Replace(c.in); c.spot && string(res.Raw) != cut {
			t.Errorf("%s: passed on as %s, want %s", c.in, res.Raw, cut)
		}
	}
}

const upInfo = `"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}`

var serverInfoCases = []struct {
	in   string
	spot bool // the name cut from the bytes, which are otherwise the upstream's
}{
	{`{"content":[{"type":"text","text":"hi"}]}`, true},
	{`{"content":[],"_meta":{` + upInfo + `}}`, true},
	{`{"_meta":{"a":1,` + upInfo + `,"b":{"c":[2]}} , "content":[{"type":"text","text":"x"}],"isError":true}`, true},
	{`{"content":[],"_meta":{"a":"io.modelcontextprotocol/serverInfo"}}`, true},
	{`{"content":[],"_META":{` + upInfo + `,"k":"v"}}`, true},
	{`{"content":[],"_meta":null}`, true},
	{`{"content":[],"\u005fmeta":{` + upInfo + `}}`, false},
	{`{"content":[],"_meta":{"io.modelcontextprotocol\/serverInfo":{"name":"up"},"k":1}}`, false},
	{`{"content":[],"_meta":{` + upInfo + `},"_meta":{"k":1}}`, false},
	{`{"content":[],"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}}},"_meta":{` + upInfo + `}}`, true},
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
		res, asks, err := rawResult(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		checkPassedOn(t, in, res, asks)
	})
}
