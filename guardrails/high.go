package guardrails

import "slices"

// HighRules returns the distinct rule ids of fs's high-severity findings, in
// order: what holds a tool for a person (approval passes it over when
// approving all, and a trusted server's baseline leaves it pending).
func HighRules(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Severity == High && !slices.Contains(out, f.Rule) {
			out = append(out, f.Rule)
		}
	}
	return out
}
