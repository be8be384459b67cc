package answer

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzEachMember: the members of any object are those encoding/json finds,
// keys with escapes read, values byte for byte (of a key given twice, the
// last).
func FuzzEachMember(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { "a" : 1 , "b":[1,{"c":"}"}], "a":"x\"y\\" } `, `{"\u005fmeta":{"k":null},"s":"\\\\"}`,
		`{"e":-1.5e3,"t":true,"n":null,"o":{"p":{"q":[]}}}`, `[1]`, `"s"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) || !utf8.Valid(obj) {
			t.Skip("not JSON, or bytes not UTF-8 (given as they are, where encoding/json puts U+FFFD)")
		}
		var want map[string]json.RawMessage
		isObject := json.Unmarshal(obj, &want) == nil && want != nil
		got := map[string]json.RawMessage{}
		ok := EachMember(obj, func(k []byte, s Span) {
			if obj[s.Start] != '"' {
				t.Fatalf("%s: a member starts at %q", obj, obj[s.Start])
			}
			got[string(k)] = obj[s.Value:s.End]
		})
		if ok != isObject {
			t.Fatalf("%s: an object %v, encoding/json says %v", obj, ok, isObject)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%s: members %q, want %q", obj, got, want)
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("%s: member %q is %s, want %s", obj, k, got[k], v)
			}
		}
	})
}
