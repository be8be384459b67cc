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
