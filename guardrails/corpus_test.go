package guardrails

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The labelled corpus (testdata/corpus, see its README) is split once, by a
// hash of each entry's server name, into the part the rules were tuned on and
// the part that only reports. Misses are printed for the tune part alone.

type corpusEntry struct {
	ID     string          `json:"id"`
	Server string          `json:"server"`
	Label  string          `json:"label"` // benign | poisoned
	Rules  []string        `json:"rules"` // expected, for a poisoned entry
	Source string          `json:"source"`
	Def    json.RawMessage `json:"def"` // a definition, or
	Old    json.RawMessage `json:"old"` // a change from old…
	New    json.RawMessage `json:"new"` // …to new
}

// part puts a server's entries in "tune" or "report": FNV-1a of its name,
// even or odd. Decided before any rule was written; never changed.
func part(server string) string {
	h := fnv.New32a()
	h.Write([]byte(server))
	if h.Sum32()%2 == 0 {
		return "tune"
	}
	return "report"
}

var allRules = []string{RuleOverride, RuleAddressed, RuleMarkup, RuleConceal, RuleCredentials, RuleExfil, RuleShadowing,
	RuleInvisible, RuleLookalike, RuleAdded}

func loadCorpus(t testing.TB) []corpusEntry {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	var all []corpusEntry
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var es []corpusEntry
		if err := json.Unmarshal(b, &es); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, es...)
	}
	return all
}

// scanEntry returns an entry's findings: Scan of a definition, Changed of a change.
func scanEntry(t testing.TB, e corpusEntry) []Finding {
	var fs []Finding
	var err error
	if e.Def != nil {
		fs, err = Scan(e.Def)
	} else {
		fs, err = Changed(e.Old, e.New)
	}
	if err != nil {
		t.Fatalf("%s: %v", e.ID, err)
	}
	return fs
}

func TestCorpusWellFormed(t *testing.T) {
	seen := map[string]bool{}
	var benign, poisoned int
	for _, e := range loadCorpus(t) {
		if seen[e.ID] {
			t.Errorf("%s: duplicate id", e.ID)
		}
		seen[e.ID] = true
		if e.Server == "" || e.Source == "" {
			t.Errorf("%s: needs a server and a source", e.ID)
		}
		if (e.Def == nil) == (e.Old == nil || e.New == nil) {
			t.Errorf("%s: needs either def or old and new", e.ID)
		}
		switch e.Label {
		case "benign":
			if len(e.Rules) > 0 {
				t.Errorf("%s: a benign entry expects no rules", e.ID)
			}
			if e.Def != nil {
				benign++
			}
		case "poisoned":
			if len(e.Rules) == 0 {
				t.Errorf("%s: a poisoned entry names the rules it expects", e.ID)
			}
			poisoned++
		default:
			t.Errorf("%s: label %q is neither benign nor poisoned", e.ID, e.Label)
		}
		for _, r := range e.Rules {
			if !slices.Contains(allRules, r) {
				t.Errorf("%s: unknown rule %q", e.ID, r)
			}
			if r == RuleAdded && e.Def != nil {
				t.Errorf("%s: %s is a rule of changes only", e.ID, r)
			}
		}
	}
	if benign < 400 || poisoned < 80 {
		t.Errorf("corpus has %d benign definitions and %d poisoned entries; want at least 400 and 80", benign, poisoned)
	}
}

// tally counts one part's outcomes.
type tally struct {
	benign, falsePos    int // benign entries, and those with any finding
	poisoned, flagged   int // poisoned entries, and those with any finding
	caught              int // poisoned entries with a finding of an expected rule
	expected, hit       map[string]int
	fired, firedPoisons map[string]int
	misses, falseFlags  []string
}

func newTally() *tally {
	return &tally{expected: map[string]int{}, hit: map[string]int{}, fired: map[string]int{}, firedPoisons: map[string]int{}}
}

func (c *tally) add(e corpusEntry, fs []Finding) {
	fired := map[string]bool{}
	for _, f := range fs {
		fired[f.Rule] = true
	}
	for r := range fired {
		c.fired[r]++
		if e.Label == "poisoned" {
			c.firedPoisons[r]++
		}
	}
	if e.Label == "benign" {
		c.benign++
		if len(fs) > 0 {
			c.falsePos++
			c.falseFlags = append(c.falseFlags, fmt.Sprintf("%s: %+v", e.ID, fs))
		}
		return
	}
	c.poisoned++
	if len(fs) > 0 {
		c.flagged++
	}
	caught := false
	var missed []string
	for _, r := range e.Rules {
		c.expected[r]++
		if fired[r] {
			c.hit[r]++
			caught = true
		} else {
			missed = append(missed, r)
		}
	}
	if caught {
		c.caught++
	}
	if len(missed) > 0 {
		c.misses = append(c.misses, fmt.Sprintf("%s: missed %v, found %+v", e.ID, missed, fs))
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// recall is the share of poisoned entries with a finding of a rule they expect.
func (c *tally) recall() float64 { return ratio(c.caught, c.poisoned) }

// fpRate is the share of benign entries with any finding.
func (c *tally) fpRate() float64 { return ratio(c.falsePos, c.benign) }

func (c *tally) report(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "== %s: %d benign, %d poisoned\n", name, c.benign, c.poisoned)
	fmt.Fprintf(&b, "recall %.3f (%d/%d caught by an expected rule; %d/%d with any finding)\n",
		c.recall(), c.caught, c.poisoned, c.flagged, c.poisoned)
	fmt.Fprintf(&b, "false positives %.3f (%d/%d benign with any finding); precision %.3f\n",
		c.fpRate(), c.falsePos, c.benign, ratio(c.flagged, c.flagged+c.falsePos))
	fmt.Fprintf(&b, "%-22s %9s %9s %6s %6s\n", "rule", "precision", "recall", "fired", "expect")
	for _, r := range allRules {
		recall := "-"
		if c.expected[r] > 0 {
			recall = fmt.Sprintf("%.3f", ratio(c.hit[r], c.expected[r]))
		}
		fmt.Fprintf(&b, "%-22s %9.3f %9s %6d %6d\n", r, ratio(c.firedPoisons[r], c.fired[r]), recall, c.fired[r], c.expected[r])
	}
	return b.String()
}

// TestCorpus prints precision and recall per rule and overall, and the
// false-positive rate on benign entries, for both parts; it gates the report
// part at the target. Per rule, precision is the share of entries
// the rule fired on that are poisoned, recall the share of entries expecting
// the rule that it fired on.
func TestCorpus(t *testing.T) {
	parts := map[string]*tally{"tune": newTally(), "report": newTally()}
	for _, e := range loadCorpus(t) {
		parts[part(e.Server)].add(e, scanEntry(t, e))
	}
	tune, report := parts["tune"], parts["report"]
	t.Log("\n" + tune.report("tune (rules were written against these)"))
	t.Log("\n" + report.report("report (never tuned on)"))
	if testing.Verbose() {
		for _, m := range tune.misses {
			t.Log("tune miss: " + m)
		}
		for _, m := range tune.falseFlags {
			t.Log("tune false positive: " + m)
		}
	}
	if r := report.recall(); r < 0.90 {
		t.Errorf("report part: recall %.3f, want at least 0.90", r)
	}
	if fp := report.fpRate(); fp > 0.02 {
		t.Errorf("report part: false-positive rate %.3f, want at most 0.02", fp)
	}
}
