package guardrails

import (
	"encoding/json"
	"strings"
)

// Changed compares two versions of one tool for a rug pull: it returns the
// findings of the new version that the old did not have (by rule and field),
// and instructions-added for each field where the new text gives the model
// a direction to move data (read, send, include, call with…) in words the
// old text did not have. An unchanged definition has no findings.
func Changed(old, new json.RawMessage) ([]Finding, error) {
	ot, err := texts(old)
	if err != nil {
		return nil, err
	}
	nt, err := texts(new)
	if err != nil {
		return nil, err
	}
	before := scanTexts(ot)
	var out []Finding
	for _, f := range scanTexts(nt) {
		if !hasFinding(before, f.Rule, f.Field) {
			out = append(out, f)
		}
	}
	oldSentences := map[string]bool{}
	for _, t := range ot {
		for _, s := range sentences(t.norm) {
			oldSentences[s.words] = true
		}
	}
	s := scanner{out: out}
	for _, t := range nt {
		if t.kind == kindName || t.kind == kindParamName {
			continue
		}
		for _, sn := range sentences(t.norm) {
			if oldSentences[sn.words] {
				continue
			}
			d := directiveRe.find(t, sn.start, sn.end)
			a := movesDataRe.find(t, sn.start, sn.end)
			if d != nil && a != nil && !negated(t.norm, a[0]) {
				s.add(RuleAdded, Medium, t, t.excerpt(sn.start, sn.end))
				break
			}
		}
	}
	return s.out, nil
}

func hasFinding(fs []Finding, rule, field string) bool {
	for _, f := range fs {
		if f.Rule == rule && f.Field == field {
			return true
		}
	}
	return false
}

// A direction aimed at the model, and a verb that moves data somewhere.
var (
	directiveRe = anyOf(`\b(?:you|your|the (?:model|assistant|ai|agent|llm)|always|never|must|make sure|be sure|ensure|before (?:you|using|calling|answering|sending|replying|doing)|first|from now on|it is (?:required|mandatory|essential)|required|mandatory|has to|have to|should then|please)\b`)
	movesDataRe = anyOf(`\b(?:read|open|send|upload|forward|post|include|attach|bcc|cc|copy|paste|share|email|mirror|hand over|message|(?:call|invoke|run) [a-z0-9_ ]{1,30} with)\b`)
)

// sentence is a span of a norm string between sentence ends.
type sentence struct {
	start, end int
	words      string
}

// sentences splits norm at sentence ends: ! ? ; a line break, or a period
// before a space (so paths like ~/.ssh/id_rsa stay whole).
func sentences(norm string) []sentence {
	var out []sentence
	start := 0
	for i := 0; i <= len(norm); i++ {
		if i < len(norm) {
			c := norm[i]
			end := c == '!' || c == '?' || c == ';' || c == '\n' || c == '.' && (i+1 == len(norm) || norm[i+1] == ' ')
			if !end {
				continue
			}
		}
		if w := strings.TrimSpace(norm[start:i]); w != "" {
			lead := strings.Index(norm[start:i], w)
			out = append(out, sentence{start + lead, start + lead + len(w), w})
		}
		start = i + 1
	}
	return out
}
