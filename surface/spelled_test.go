package surface

import (
	"strings"
	"testing"
)

// spelledAsSDK leaves to the SDK a message whose own keys or whose params'
// named keys differ from their names but for case, or are escaped, or that
// nests near the SDK's depth limit; keys elsewhere (in arguments, ids,
// other members, strings) are not its business.
func TestSpelledAsSDK(t *testing.T) {
	p := []string{"name", "arguments", "_meta"}
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"x","arguments":{"Name":1,"a":{"NAME":[{"Method":2}]}},"_meta":{}}}`: true,
		`{"jsonrpc":"2.0","Method":"m"}`:                                      false,
		`{"jsonrpc":"2.0","params":{"arguments":{"x":{}},"Name":"x"}}`:        false,
		`{"jsonrpc":"2.0","params":{"arguments":[{"x":{}}],"nAme":"x"}}`:      false,
		`{"jsonrpc":"2.0","params":{"arguments":"{\"Name\":1}","name":"x"}}`:  true,
		`{"jsonrpc":"2.0","params":{"n\u0061me":"x"}}`:                        false,
		`{"jsonrpc":"2.0","params":{"arguments":{"n\u0061me":"x"}}}`:          true,
		`{"jsonrpc":"2.0","id":[{"Method":1}],"params":{"name":"x"}}`:         true,
		`{"jsonrpc":"2.0","x":{"params":{"Name":1}},"params":{"name":"x"}}`:   true,
		`{"x":[` + strings.Repeat("[", 899) + strings.Repeat("]", 899) + `]}`: false,
		`{"x":` + strings.Repeat("[", 898) + strings.Repeat("]", 898) + `}`:   true,
	} {
		if got := spelledAsSDK([]byte(body), p...); got != want {
			t.Errorf("%.80s: %v, want %v", body, got, want)
		}
	}
}
