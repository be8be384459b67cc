package surface

import "testing"

// A request's numeric id is refused where the SDK would answer it under
// another; what it answers under the same id goes on.
func TestInexactID(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call"}`:                       true,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call"}`:          true,
		`{"jsonrpc":"2.0","id":-1e300,"method":"ping"}`:                          true,
		` [{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":0.1,"method":"ping"}]`: true,
		`{"jsonrpc":"2.0","id":1e2,"method":"tools/call"}`:                       false,
		`{"jsonrpc":"2.0","id":-9007199254740992,"method":"tools/call"}`:         false,
		`{"jsonrpc":"2.0","id":"1.5","method":"tools/call"}`:                     false,
		`{"jsonrpc":"2.0","id":1.5,"result":{}}`:                                 false, // an answer, not a request
		`{"jsonrpc":"2.0","ID":1.5,"method":"ping"}`:                             false, // no id to the SDK
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`:                           true,
		`{"jsonrpc":`: false,
	} {
		if _, got := inexactID([]byte(body)); got != want {
			t.Errorf("%s: refused %v, want %v", body, got, want)
		}
	}
}
