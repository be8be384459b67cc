package protocol

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Check answers what JSON-RPC 2.0 says a server answers a line that is not
// a message, and lets every message through.
func TestCheck(t *testing.T) {
	bad := []struct {
		line, id string
		code     int64
	}{
		{`garbage{`, `null`, jsonrpc.CodeParseError},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, `null`, jsonrpc.CodeParseError},
		{`[]`, `null`, jsonrpc.CodeInvalidRequest},
		{`7`, `null`, jsonrpc.CodeInvalidRequest},
		{`null`, `null`, jsonrpc.CodeInvalidRequest},
		{`{"id":7}`, `7`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":"a"}`, `"a"`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, `7`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":7,"method":3}`, `7`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, `null`, jsonrpc.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","result":{}}`, `null`, jsonrpc.CodeInvalidRequest},
	}
	for _, c := range bad {
		answers, batched := Check([]byte(c.line))
		if len(answers) != 1 || batched || answers[0].Error.Code != c.code || string(answers[0].ID) != c.id || answers[0].Error.Message == "" {
			t.Errorf("Check(%s) = %+v (batched %t), want one error %d with id %s", c.line, answers, batched, c.code, c.id)
		}
	}
	for _, good := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc": "2\u002e0", "id": null, "method": "ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"warden-fp-1","result":{}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	} {
		if answers, _ := Check([]byte(good)); answers != nil {
			t.Errorf("Check(%s) refused it: %+v", good, answers)
		}
	}

	// A batch with an invalid message: that one is refused and each request
	// is answered as not sent, in one batch; its notifications get nothing.
	answers, batched := Check([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":2},{"jsonrpc":"2.0","method":"notifications/x"}]`))
	if !batched || len(answers) != 2 {
		t.Fatalf("a batch with an invalid message: %+v (batched %t)", answers, batched)
	}
	if ids, _ := json.Marshal([]json.RawMessage{answers[0].ID, answers[1].ID}); string(ids) != `[1,2]` || answers[0].Error.Code != jsonrpc.CodeInvalidRequest {
		t.Errorf("a batch with an invalid message: %+v", answers)
	}
}

// A message refused as a whole is answered under its id, even when it was
// cut short, and a batch with an answer to each request.
func TestRefusals(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":"a","method":"initialize"}`, `{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"no such view"}}`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no such view"}}`},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
			`[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no such view"}},{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"no such view"}}]`},
		{`[{"jsonrpc":"2.0","method":"n"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no such view"}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"big":"cut sh`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"no such view"}}`},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no such view"}}`},
		{`garbage{`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no such view"}}`},
	} {
		if got := string(EncodeReplies(Refusals([]byte(c.body), jsonrpc.CodeInvalidRequest, "no such view"))); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.body, got, c.want)
		}
	}
}

// Messages reads one message as a batch of one, a batch as it is, and
// says when the body is neither.
func TestMessages(t *testing.T) {
	type msg struct {
		Method string `json:"method"`
	}
	for body, want := range map[string][]string{
		`{"method":"a"}`:                   {"a"},
		` [{"method":"a"},{"method":"b"}]`: {"a", "b"},
		"\n{\"method\":\"c\"}":             {"c"},
	} {
		got, err := Messages[msg]([]byte(body))
		var names []string
		for _, m := range got {
			names = append(names, m.Method)
		}
		if err != nil || !slices.Equal(names, want) {
			t.Errorf("Messages(%q) = %v, %v; want %v", body, names, err, want)
		}
	}
	for _, bad := range []string{``, `[{"method":"a"}`, `"text"`, `{"method":1}`} {
		if got, err := Messages[msg]([]byte(bad)); err == nil {
			t.Errorf("Messages(%q) = %v; want an error", bad, got)
		}
	}
}
