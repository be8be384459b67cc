package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
	"github.com/wardenmcp/warden/answer"
)

// sdkUnmarshal decodes data as the SDK's client does (go-sdk's
// internal/json: segmentio's decoder, struct fields matched case and all):
// the oracle of how the direct path must read an upstream's keys.
func sdkUnmarshal(data []byte, v any) error {
	d := segjson.NewDecoder(bytes.NewReader(data))
	d.DontMatchCaseInsensitiveStructFields()
	return d.Decode(v)
}

// decodeMessage reads a message as the SDK's client reads it: the result,
// id, method and error it finds are the ones jsonrpc.DecodeMessage finds,
// keys matched exactly (escapes read, the last of several), and the result
// is not copied.
func TestDecodeMessageAsSDK(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":"c1","result":{"content":[{"type":"text","text":"a \"}] b"}]}}`,
		` { "result" : [1, {"x": "}"}, "\\"] , "id" : "c1" , "jsonrpc":"2.0" } `,
		`{"jsonrpc":"2.0","id":"c1","Result":{"a":1},"result":{"b":[true,null,-1.5e3]}}`,
		`{"jsonrpc":"2.0","id":"c1","result":{"b":1},"RESULT":{"a":1}}`,
		`{"jsonrpc":"2.0","id":"c1","Result":{"a":1}}`,
		`{"jsonrpc":"2.0","id":"c1","meta":{"result":0},"result":"s"}`,
		`{"jsonrpc":"2.0","id":"c1","res\u0075lt":{"escaped":true}}`,
		`{"jsonrpc":"2.0","id":"c1","result":{"a":1},"result":{"last":1}}`,
		`{"jsonrpc":"2.0","id":"c1","error":{"code":-32602,"message":"bad","data":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":"c1","result":{},"ERROR":{"code":-32602,"message":"bad"}}`,
		`{"jsonrpc":"2.0","id":"c1","error":{"CODE":-32602,"Message":"bad"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":7,"METHOD":"ping","result":{}}`,
	} {
		m, err := decodeMessage([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		want, err := jsonrpc.DecodeMessage([]byte(in))
		if err != nil {
			t.Fatalf("%s: the SDK: %v", in, err)
		}
		var id jsonrpc.ID
		var method string
		var result json.RawMessage
		var rpcErr *jsonrpc.Error
		switch w := want.(type) {
		case *jsonrpc.Request:
			id, method = w.ID, w.Method
		case *jsonrpc.Response:
			id, result = w.ID, w.Result
			if w.Error != nil {
				rpcErr = w.Error.(*jsonrpc.Error)
			}
		}
		wantID, _ := json.Marshal(id.Raw())
		if string(m.ID) != string(wantID) || m.Method != method || string(m.Result) != string(result) ||
			(m.Error == nil) != (rpcErr == nil) || m.Error != nil && (m.Error.Code != rpcErr.Code || m.Error.Message != rpcErr.Message) {
			t.Errorf("%s:\n read as id %s method %q result %s error %v\n the SDK: id %s method %q result %s error %v",
				in, m.ID, m.Method, m.Result, m.Error, wantID, method, result, rpcErr)
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
	var flags struct { // as the SDK's client reads them: keys case and all
		IsError       bool                       `json:"isError"`
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	if err := sdkUnmarshal(in, &flags); err != nil {
		t.Fatal(err)
	}
	wantAsks := flags.ResultType == "input_required" || len(flags.InputRequests) > 0
	if _, named := got.Meta[mcp.MetaKeyServerInfo]; named || string(g) != string(w) || res.IsError != flags.IsError || asks != wantAsks {
		t.Errorf("%s: passed on as %s (isError %v, asks %v), want %s", in, res.Raw, res.IsError, asks, w)
	}
}

// FuzzRawResult: whatever a tool result holds, it is passed on as it came
// but for the upstream's name, and its flags are read as the SDK's client
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

// The differential of the two call paths on one answer: the direct path
// reads an upstream's answer as the SDK's client does, keys case and all
// (encoding/json's folding once made it take "ISERROR" for isError, and
// "Result" for the result, where the SDK does not).
func TestDirectPathReadsAnswersAsSDK(t *testing.T) {
	h, c := startHostile(t)
	results := []string{
		`{"content":[{"type":"text","text":"x"}],"ISERROR":true}`,
		`{"Content":[{"type":"text","text":"x"}],"isError":true}`,
		`{"content":[],"isError":true,"IsError":false}`,
		`{"content":[],"IsError":true,"isError":false}`,
		`{"content":[],"is\u0045rror":true}`,
	}
	paths := map[string]func(context.Context, *mcp.ClientSession, *Call, *mcp.CallToolParams) (*answer.Result, error){
		"direct": c.callOnSession, "sdk": callSDK, // Start chose the direct path
	}
	for _, r := range results {
		for _, msg := range []string{
			`{"jsonrpc":"2.0","id":$ID,"result":` + r + `}`,
			`{"jsonrpc":"2.0","id":$ID,"Result":{"content":[],"isError":true},"result":` + r + `}`,
			`{"jsonrpc":"2.0","id":$ID,"result":` + r + `,"Result":{"content":[],"isError":true}}`,
		} {
			h.set(func(id []byte) (int, string, []byte) {
				return http.StatusOK, "application/json", bytes.ReplaceAll([]byte(msg), []byte("$ID"), id)
			})
			got := map[string]string{}
			for name, path := range paths {
				c.callOnSession = path
				res, err := call(t, c)
				if err != nil {
					t.Fatalf("%s path, answer %s: %v", name, msg, err)
				}
				d, err := res.Tool()
				if err != nil {
					t.Fatalf("%s path, answer %s: %v", name, msg, err)
				}
				b, _ := json.Marshal(d)
				got[name] = fmt.Sprintf("isError %v, decoded %s", res.IsError, b)
			}
			if got["direct"] != got["sdk"] {
				t.Errorf("answer %s:\n direct path: %s\n SDK path:    %s", msg, got["direct"], got["sdk"])
			}
		}
	}
}

// BenchmarkDecodeAnswer: reading a call's answer on the direct path (the
// message, then the result's flags), for a small answer and a large one.
func BenchmarkDecodeAnswer(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		text := strings.Repeat("x", size)
		msg := []byte(`{"jsonrpc":"2.0","id":"w1-7","result":{"content":[{"type":"text","text":"` + text + `"}],"isError":false}}`)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				m, err := decodeMessage(msg)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := rawResult(m.Result); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
