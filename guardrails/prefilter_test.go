package guardrails

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
	"testing"
)

// Every phrase set must find exactly what its plain regular expressions find:
// the word filter and the anchored matching only skip work.
func TestPhrasesFindWhatRegexpsFind(t *testing.T) {
	sets := map[string]phrases{
		"override": overrideRe, "addressed": addressedRe, "vocative": vocativeRe, "markup": markupRe, "conceal": concealRe, "shadow": shadowRe,
		"place": credentialPlaceRe, "secret": secretRe, "read": readRe, "handVerb": handVerbRe,
		"hand": handRe, "fill": fillRe, "foreign": foreignDataRe, "address": addressRe,
		"send": sendRe, "bulk": bulkSendRe, "elsewhere": elsewhere, "directive": directiveRe,
		"movesData": movesDataRe, "extra": extraRe, "atModel": atModelRe, "nameCredential": nameCredentialRe, "nameForeign": nameForeignRe,
	}
	var ts []*text
	for _, e := range loadCorpus(t) {
		for _, d := range [][]byte{e.Def, e.Old, e.New} {
			if d == nil {
				continue
			}
			x, err := texts(d)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, x...)
		}
	}
	checked := 0
	for name, ps := range sets {
		for _, x := range ts {
			for _, window := range [][2]int{{0, len(x.norm)}, {len(x.norm) / 3, len(x.norm)}} {
				lo, hi := window[0], window[1]
				got := ps.findAll(x, lo, hi)
				want := plainFindAll(ps, x.norm, lo, hi)
				if !slices.EqualFunc(got, want, slices.Equal) {
					t.Errorf("%s in %q [%d:%d]: phrases found %v, regexps %v", name, x.norm, lo, hi, got, want)
				}
				checked += len(want)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no matches at all: the comparison proves nothing")
	}
}

// plainRegexps are the patterns compiled as they are, by source.
var plainRegexps sync.Map

// plainFindAll is findAll without the filter: each regexp over the window.
func plainFindAll(ps phrases, norm string, lo, hi int) [][]int {
	var all [][]int
	for i := range ps {
		p := &ps[i]
		re, ok := plainRegexps.Load(p.src)
		if !ok {
			re, _ = plainRegexps.LoadOrStore(p.src, regexp.MustCompile(p.src))
		}
		for _, m := range re.(*regexp.Regexp).FindAllStringIndex(norm[lo:hi], -1) {
			all = append(all, []int{lo + m[0], lo + m[1]})
		}
	}
	slices.SortStableFunc(all, func(a, b []int) int { return a[0] - b[0] })
	return all
}

func TestRequiredWords(t *testing.T) {
	for _, c := range []struct {
		re   string
		want []string // nil: no filter possible
	}{
		{`\bput|paste\b`, []string{"put", "paste"}},
		{`\b(?:pass|passes|passed)\b as`, []string{"pass", "passes", "passed"}},
		{`\bapi[ _-]?keys?\b`, []string{"api key", "api keys", "api_key", "api_keys", "api-key", "api-keys", "apikey", "apikeys"}},
		{`[a-z]+ of the user`, []string{" of the user"}},
		{`\bforget\b.*`, []string{"forget"}},
		{`x*`, nil},
	} {
		tree, err := syntax.Parse(c.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := required(tree.Simplify())
		slices.Sort(got)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: required words %q, want %q", c.re, got, want)
		}
	}
}

// Phrases' regexps are compiled on first use; each must compile, not only
// those the corpus happens to need (regexp panics on one that does not).
func TestEveryPhraseCompiles(t *testing.T) {
	compiled()
	for _, ps := range declared {
		for i := range ps {
			ps[i].regexp()
		}
	}
}
