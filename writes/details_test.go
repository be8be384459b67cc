package writes

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestDescribeArgs(t *testing.T) {
	raw := json.RawMessage(`{"to": "a@example.test", "body": {"text": "hi"}, "n": 3}`)
	args, omitted := DescribeArgs(raw, false)
	want := []Arg{{Name: "body", Bytes: len(`{"text": "hi"}`)}, {Name: "n", Bytes: 1}, {Name: "to", Bytes: len(`"a@example.test"`)}}
	if !reflect.DeepEqual(args, want) || omitted != 0 {
		t.Errorf("names and sizes: %+v, %d; want %+v", args, omitted, want)
	}
	args, _ = DescribeArgs(raw, true)
	if args[0].Value != `{"text": "hi"}` || args[2].Value != `"a@example.test"` || args[0].ValueCut {
		t.Errorf("values: %+v", args)
	}
	for _, none := range []string{``, `null`, `[1, 2]`, `"x"`, `{bad`} {
		if args, omitted := DescribeArgs(json.RawMessage(none), true); args != nil || omitted != 0 {
			t.Errorf("%q: %+v, %d; want none", none, args, omitted)
		}
	}
}

// A recorded value keeps no credential in a known format, wherever it sits
// in what is kept.
func TestDescribeArgsMasksCredentials(t *testing.T) {
	token := "ghp_" + strings.Repeat("aB3dE5gH7j", 3) + "K9mN0p"
	long := strings.Repeat("x", MaxArgValue-20) + token // starts in what is kept, ends beyond
	raw, _ := json.Marshal(map[string]any{"auth": "Bearer " + token, "body": long, "n": 3})
	args, _ := DescribeArgs(raw, true)
	for _, a := range args {
		if strings.Contains(a.Value, token[:12]) {
			t.Errorf("%s: the token is kept: %q", a.Name, a.Value)
		}
	}
	if !strings.Contains(args[0].Value, "[REDACTED:github-pat]") || args[0].ValueCut || args[2].Value != "3" {
		t.Errorf("values: %+v", args)
	}
	if !args[1].ValueCut || len(args[1].Value) > MaxArgValue {
		t.Errorf("a long value: %d bytes, cut %v", len(args[1].Value), args[1].ValueCut)
	}
}

// Whatever a client sends, what is kept of it is bounded.
func TestDescribeArgsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"_` + strings.Repeat("é", MaxName) + `": "` + strings.Repeat("ü", MaxArgValue) + `"`)
	for i := range MaxArgs + 10 {
		fmt.Fprintf(&b, `, "a%03d": 1`, i)
	}
	b.WriteString("}")
	args, omitted := DescribeArgs(json.RawMessage(b.String()), true)
	if len(args) != MaxArgs || omitted != 11 {
		t.Fatalf("%d arguments listed, %d omitted; want %d and 11", len(args), omitted, MaxArgs)
	}
	long := args[0] // "_é..." sorts before "a000"
	if len(long.Name) > MaxName || !strings.HasPrefix(long.Name, "_é") || len(long.Value) > MaxArgValue || !long.ValueCut ||
		long.Bytes != 2+2*MaxArgValue || !json.Valid([]byte(`"`+long.Name+`"`)) || !strings.HasSuffix(long.Value, "ü") {
		t.Errorf("a long name and value: %d-byte name, %d-byte value, cut %v, %d bytes", len(long.Name), len(long.Value), long.ValueCut, long.Bytes)
	}
}

func TestClientOf(t *testing.T) {
	c := ClientOf(&mcp.Implementation{Name: "claude-code", Version: strings.Repeat("9", 1000)}, "s1")
	if c.Name != "claude-code" || len(c.Version) != MaxName || c.Session != "s1" {
		t.Errorf("%+v", c)
	}
	if c := ClientOf(nil, ""); c != (Caller{}) {
		t.Errorf("no client info: %+v", c)
	}
}
