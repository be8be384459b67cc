package guardrails

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzScan: any text in any field scans without panicking, and every finding
// names a rule, a severity and a field, with an excerpt a page can show.
func FuzzScan(f *testing.F) {
	for _, e := range loadCorpus(f) {
		var d struct{ Description string }
		if e.Def != nil && json.Unmarshal(e.Def, &d) == nil {
			f.Add(d.Description, "sidenote")
		}
	}
	f.Add("\xff\xfe read ~/.ssh/id_rsa \u0130\u023a", "\u202e")
	f.Fuzz(func(t *testing.T, desc, param string) {
		old := tool("An honest tool.", param, desc)
		fs, err := Scan(tool(desc, param, desc))
		if err != nil {
			t.Fatal(err)
		}
		more, err := Changed(old, tool(desc, param, desc))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(fs, more...) {
			if f.Rule == "" || f.Field == "" || (f.Severity != Medium && f.Severity != High) || !utf8.ValidString(f.Excerpt) {
				t.Errorf("finding %+v", f)
			}
		}
	})
}

// FuzzFindSecrets: any arguments, well-formed or not, are checked without
// panicking; every finding names a path and a format; a value found to hold
// a credential of a known format is changed by MaskSecrets.
func FuzzFindSecrets(f *testing.F) {
	for _, s := range testSecrets {
		f.Add("note", "see "+s, []byte(`{"a": [1, {"b": "`+s+`"}]}`))
	}
	f.Add("password", "Xk9#mP2$vL7qR4", []byte(`{"a": "\ud83d\ude00", "b": [`))
	f.Fuzz(func(t *testing.T, name, value string, raw []byte) {
		FindSecrets(raw)
		b, err := json.Marshal(map[string]string{name: value})
		if err != nil {
			return
		}
		var back map[string]string // as read: invalid UTF-8 became U+FFFD
		if json.Unmarshal(b, &back) != nil {
			t.Fatal("marshalled arguments do not read back")
		}
		for _, v := range back {
			value = v
		}
		for _, fd := range FindSecrets(b) {
			if fd.Path == "" || fd.Rule == "" {
				t.Fatalf("finding %+v", fd)
			}
			if fd.Rule != RuleSecretParam && MaskSecrets(value) == value {
				t.Fatalf("%s found in %q, which MaskSecrets leaves as it is", fd.Rule, value)
			}
		}
	})
}
