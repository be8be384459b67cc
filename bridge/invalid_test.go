package bridge

import "testing"

// check answers what JSON-RPC 2.0 says a server answers a line that is not
// a message, and lets every message through.
func TestCheck(t *testing.T) {
	bad := []struct {
		line, id string
		code     int
	}{
		{`garbage{`, `null`, codeParseError},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, `null`, codeParseError},
		{`[]`, `null`, codeInvalidRequest},
		{`7`, `null`, codeInvalidRequest},
		{`null`, `null`, codeInvalidRequest},
		{`{"id":7}`, `7`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":"a"}`, `"a"`, codeInvalidRequest},
		{`{"jsonrpc":"1.0","id":7,"method":"ping"}`, `7`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":7,"method":3}`, `7`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, `null`, codeInvalidRequest},
		{`{"jsonrpc":"2.0","result":{}}`, `null`, codeInvalidRequest},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":2}]`, `2`, codeInvalidRequest},
	}
	for _, c := range bad {
		r := check([]byte(c.line))
		if r == nil || r.code != c.code || string(r.id) != c.id || r.message == "" {
			t.Errorf("check(%s) = %+v, want code %d with id %s", c.line, r, c.code, c.id)
		}
	}
	for _, good := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"warden-fp-1","result":{}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
	} {
		if r := check([]byte(good)); r != nil {
			t.Errorf("check(%s) refused it: %+v", good, r)
		}
	}
}
