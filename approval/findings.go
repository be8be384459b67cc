package approval

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/wardenmcp/warden/guardrails"
)

// findingsOf are what the guardrails scanner finds in rec's current
// definition and, when an approved definition differs from it, what the
// change added (guardrails.Changed), each once. scan is the current
// definition's scan when already made (outside the lock), nil to scan
// now. Never nil: a scanned record says so with an empty list.
func findingsOf(rec *ToolRecord, scan []guardrails.Finding) []guardrails.Finding {
	if scan == nil {
		scan = scanDefinition(rec.Current)
	}
	out := slices.Clone(scan)
	if len(rec.Approved) > 0 && rec.ApprovedHash != "" && rec.ApprovedHash != rec.CurrentHash {
		added, _ := guardrails.Changed(rec.Approved, rec.Current)
		for _, f := range added {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// scanDefinition scans one canonical definition; never nil.
func scanDefinition(def json.RawMessage) []guardrails.Finding {
	fs, _ := guardrails.Scan(def) // canonical JSON of an object: Scan cannot fail
	if fs == nil {
		fs = []guardrails.Finding{}
	}
	return fs
}

// flagged reports whether the tool has a high-severity finding: a trusted
// server's baseline leaves it pending, and approving all passes over it
// unless forced.
func (t *ToolRecord) flagged() bool { return len(guardrails.HighRules(t.Findings)) > 0 }

// holdReason says why a waiting tool with a high-severity finding is held
// and how a person approves it; "" for any other tool. baseline: the pass
// that would have approved it as a trusted server's baseline.
func holdReason(rec *ToolRecord, baseline bool) string {
	rules := guardrails.HighRules(rec.Findings)
	if len(rules) == 0 || (rec.Status != StatusPending && rec.Status != StatusChanged) {
		return ""
	}
	why := fmt.Sprintf("high-severity finding (%s)", strings.Join(rules, ", "))
	if baseline && rec.Status == StatusPending {
		why += ": the trusted server's baseline did not approve it"
	}
	return fmt.Sprintf("%s; approving all passes over it: approve it by name (warden review approve %s %s) or all with --force (warden review approve %s --all --force)",
		why, rec.Server, rec.Name, rec.Server)
}

// approvedFindings are the findings of a definition once approved: those of
// the definition itself, without what a change added to an older one.
func approvedFindings(fs []guardrails.Finding) []guardrails.Finding {
	return slices.DeleteFunc(slices.Clone(fs), func(f guardrails.Finding) bool { return f.Rule == guardrails.RuleAdded })
}
