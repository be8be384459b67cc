package guardrails

import (
	"encoding/json"
	"strings"
)

// Severity says how much a finding should weigh in a person's decision: a
// high one holds even a trusted server's tool for review. (The API's low is
// reserved; no rule is that unsure yet.)
type Severity string

const (
	Medium Severity = "medium"
	High   Severity = "high"
)

// Rule ids; see the package documentation for what each one finds.
const (
	RuleOverride    = "instruction-override"
	RuleMarkup      = "prompt-markup"
	RuleConceal     = "conceal-from-user"
	RuleCredentials = "credential-access"
	RuleExfil       = "exfiltration"
	RuleShadowing   = "tool-shadowing"
	RuleInvisible   = "invisible-characters"
	RuleLookalike   = "lookalike-characters"
	RuleAdded       = "instructions-added"
	RuleAddressed   = "addressed-to-model"
)

// Finding is one reason to read a definition closely: which rule, how
// serious, where (Field: "name", "title", "description", "param x",
// "param x.y", "output x", "_meta key"…) and the words that raised it.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Field    string   `json:"field"`
	Excerpt  string   `json:"excerpt"`
}

// Scan reads one tool definition, the canonical JSON Warden pins
// (approval.ToolRecord.Current; any MCP tool JSON will do), and returns its
// findings in field order, at most one per rule and field. It fails only on
// bytes that are not a JSON object.
func Scan(def json.RawMessage) ([]Finding, error) {
	ts, err := texts(def)
	if err != nil {
		return nil, err
	}
	return scanTexts(ts), nil
}

// texts parses a definition and prepares its fields.
func texts(def json.RawMessage) ([]*text, error) {
	fs, err := fields(def)
	if err != nil {
		return nil, err
	}
	ts := make([]*text, len(fs))
	for i, f := range fs {
		ts[i] = prepare(f)
	}
	return ts, nil
}

func scanTexts(ts []*text) []Finding {
	var s scanner
	for _, t := range ts {
		s.characters(t)
		switch t.kind {
		case kindName, kindParamName:
			s.name(t)
		default:
			s.phrases(t)
		}
	}
	return s.out
}

// scanner collects findings, one per rule and field.
type scanner struct {
	out []Finding
}

func (s *scanner) add(rule string, sev Severity, t *text, excerpt string) {
	for _, f := range s.out {
		if f.Rule == rule && f.Field == t.where {
			return
		}
	}
	s.out = append(s.out, Finding{Rule: rule, Severity: sev, Field: t.where, Excerpt: excerpt})
}

// characters finds invisible and look-alike characters in any field.
func (s *scanner) characters(t *text) {
	if len(t.hidden) > 0 {
		n := 0
		for _, h := range t.hidden {
			n += len([]rune(t.text[h.start:h.end]))
		}
		sev := Medium
		if t.strong || n > 3 {
			sev = High
		}
		h := t.hidden[0]
		start := max(0, h.start-40)
		for start > 0 && !strings.ContainsRune(" \n\t", rune(t.text[start-1])) {
			start-- // back to a word's start, never into a multi-byte rune
		}
		s.add(RuleInvisible, sev, t, visible(t.text[start:h.end]))
	}
	if len(t.lookalike) > 0 {
		sev := Medium
		if t.kind == kindName || t.kind == kindParamName {
			sev = High
		}
		w := t.lookalike[0]
		s.add(RuleLookalike, sev, t, lookalikeExcerpt(t.text[w.start:w.end]))
	}
}

// lookalikeExcerpt names the letters that are not what they seem.
func lookalikeExcerpt(word string) string {
	var odd []string
	for _, r := range word {
		if _, ok := latinLookalike(r); ok {
			odd = append(odd, string(r)+" "+runeName(r))
		}
	}
	if len(odd) == 0 {
		return word
	}
	return word + " (" + strings.Join(odd, ", ") + ")"
}

// Names that carry a credential file or the conversation: a parameter made
// to receive them.
var (
	nameCredentialRe = anyOf(`\b(?:ssh|id rsa|id ed25519|id ecdsa|id dsa|aws credentials|npmrc|netrc|private key|seed phrase|mnemonic|mcp json|kubeconfig text)\b`)
	nameForeignRe    = anyOf(`\b(?:system prompt|conversation|chat history|transcript|prior outputs|previous messages)\b`)
)

var nameWords = strings.NewReplacer("_", " ", "-", " ", ".", " ")

// name reads a parameter's name as words. (A tool's name has only its
// characters checked: names like read_credentials are a tool's honest job.)
func (s *scanner) name(t *text) {
	if t.kind != kindParamName {
		return
	}
	words := prepare(field{text: nameWords.Replace(t.text)})
	n := words.norm
	if nameCredentialRe.match(words, 0, len(n)) {
		s.add(RuleCredentials, High, t, t.text)
		s.add(RuleExfil, High, t, t.text)
	}
	if nameForeignRe.match(words, 0, len(n)) {
		s.add(RuleExfil, High, t, t.text)
	}
}

// phrases runs the phrase rules over prose and parameter text.
func (s *scanner) phrases(t *text) {
	n := t.norm
	for _, m := range overrideRe.findAll(t, 0, len(n)) {
		if !mentioned(n, m[0]) {
			s.add(RuleOverride, High, t, t.excerpt(m[0], m[1]))
			break
		}
	}
	if m := addressedRe.find(t, 0, len(n)); m != nil {
		s.add(RuleAddressed, Medium, t, t.excerpt(m[0], m[1]))
	}
	for _, m := range vocativeRe.findAll(t, 0, len(n)) {
		if opensSentence(n, m[0]) {
			s.add(RuleAddressed, Medium, t, t.excerpt(m[0], m[1]))
			break
		}
	}
	if m := markupRe.find(t, 0, len(n)); m != nil {
		s.add(RuleMarkup, Medium, t, t.excerpt(m[0], m[1]))
	}
	if m := concealRe.find(t, 0, len(n)); m != nil {
		s.add(RuleConceal, High, t, t.excerpt(m[0], m[1]))
	}
	for _, m := range shadowRe.findAll(t, 0, len(n)) {
		if !self(n[m[0]:m[1]]) {
			s.add(RuleShadowing, High, t, t.excerpt(m[0], m[1]))
			break
		}
	}
	places, secrets := secretPlaces(t), secretRe.findAll(t, 0, len(n))
	h := &hands{t: t}
	s.credentials(t, h, places, secrets)
	s.exfiltration(t, h, places, secrets)
}

// secretPlaces returns the credential places the text names, less the
// files of a credential directory that hold no secret (~/.ssh/known_hosts,
// config, authorized_keys, public keys).
func secretPlaces(t *text) [][]int {
	var out [][]int
	for _, m := range credentialPlaceRe.findAll(t, 0, len(t.norm)) {
		rest := t.norm[m[1]:]
		path, _, _ := strings.Cut(rest, " ")
		if strings.HasPrefix(rest, "/known_hosts") || strings.HasPrefix(rest, "/config") ||
			strings.HasPrefix(rest, "/authorized_keys") || strings.HasSuffix(strings.TrimRight(path, ".,;)"), ".pub") {
			continue
		}
		out = append(out, m)
	}
	return out
}

// opensSentence reports whether norm[i] starts the text, a sentence or what
// follows a tag or a colon.
func opensSentence(n string, i int) bool {
	before := strings.TrimRight(n[:i], " ")
	return before == "" || strings.ContainsRune(".!?>:", rune(before[len(before)-1]))
}

// mentioned reports whether the words at i are quoted as an example ("such
// as 'ignore previous instructions'") rather than said.
func mentioned(n string, i int) bool {
	before := n[max(0, i-30):i]
	if q := strings.TrimRight(before, " "); strings.HasSuffix(q, "'") || strings.HasSuffix(q, "\"") {
		return true
	}
	for _, w := range []string{"such as", "like ", "e.g.", "for example", "contain"} {
		if strings.Contains(before, w) {
			return true
		}
	}
	return false
}

// self reports whether a shadowing match only speaks of the tool itself.
func self(m string) bool {
	return strings.Contains(m, "this tool") && !strings.Contains(m, "other") && !strings.Contains(m, "instead") &&
		!strings.Contains(m, "rather") && !strings.Contains(m, "replaces")
}

// negated reports whether the verb at i is negated ("do not include…") or a
// description of what happens ("the value is passed as…") rather than a
// request.
func negated(n string, i int) bool {
	before := " " + n[max(0, i-16):i]
	for _, w := range []string{" not ", " never ", "n't ", " no "} {
		if strings.Contains(before, w) {
			return true
		}
	}
	for _, w := range []string{" is ", " are ", " gets "} {
		if strings.HasSuffix(before, w) {
			return true
		}
	}
	return false
}

// sentenceStart returns where the sentence holding norm[i] starts, or lo if
// it starts before; sentenceEnd where it ends, or hi. A period ends a
// sentence only before a space, so paths like ~/.ssh stay whole.
func sentenceStart(n string, lo, i int) int {
	for j := i - 1; j > lo; j-- {
		if n[j] == ' ' && strings.ContainsRune(".!?;", rune(n[j-1])) {
			return j + 1
		}
	}
	return lo
}

func sentenceEnd(n string, i, hi int) int {
	for j := i; j+1 < hi; j++ {
		if strings.ContainsRune(".!?;", rune(n[j])) && n[j+1] == ' ' {
			return j + 1
		}
	}
	return hi
}

// hands lists a text's requests, not negated, to hand something over (into
// an argument, a field, "here"; in a parameter's own text, any request to
// fill it), found once per text when a rule first needs them.
type hands struct {
	t    *text
	done bool
	all  [][]int
}

// within returns the first request inside norm[lo:hi], or nil.
func (h *hands) within(lo, hi int) []int {
	if !h.done {
		h.done = true
		n := h.t.norm
		for _, v := range handVerbRe.findAll(h.t, 0, len(n)) {
			if d := handDestRe().FindStringIndex(n[v[1]:min(len(n), v[1]+handDestWindow)]); d != nil && !negated(n, v[0]) {
				h.all = append(h.all, []int{v[0], v[1] + d[1]})
			}
		}
		h.all = append(h.all, h.find(handRe)...)
		if h.t.kind == kindParam {
			h.all = append(h.all, h.find(fillRe)...)
		}
	}
	for _, m := range h.all {
		if m[0] >= lo && m[1] <= hi {
			return m
		}
	}
	return nil
}

func (h *hands) find(ps phrases) [][]int {
	var out [][]int
	for _, m := range ps.findAll(h.t, 0, len(h.t.norm)) {
		if !negated(h.t.norm, m[0]) {
			out = append(out, m)
		}
	}
	return out
}

// credentials finds requests to read a credential store or hand over secrets.
func (s *scanner) credentials(t *text, hand *hands, places, secrets [][]int) {
	n := t.norm
	for _, m := range places {
		lo, hi := sentenceStart(n, max(0, m[0]-60), m[0]), sentenceEnd(n, m[1], min(len(n), m[1]+100))
		if r := readRe.findAll(t, lo, m[0]); len(r) > 0 {
			last := r[len(r)-1]
			if !negated(n, last[0]) {
				s.add(RuleCredentials, High, t, t.excerpt(last[0], m[1]))
				return
			}
		}
		if h := hand.within(m[0], hi); h != nil {
			s.add(RuleCredentials, High, t, t.excerpt(m[0], h[1]))
			return
		}
		if atModelRe.match(t, lo, hi) {
			s.add(RuleCredentials, High, t, t.excerpt(m[0], m[1]))
			return
		}
	}
	for _, m := range secrets {
		lo, hi := max(0, m[0]-80), min(len(n), m[1]+120)
		if h := hand.within(lo, hi); h != nil && (t.kind != kindParam || fromElsewhere(t, m, lo, hi)) {
			s.add(RuleCredentials, High, t, t.excerpt(min(m[0], h[0]), max(m[1], h[1])))
			return
		}
		if readRe.match(t, lo, m[0]) && fromElsewhere(t, m, lo, hi) {
			s.add(RuleCredentials, High, t, t.excerpt(m[0], m[1]))
			return
		}
	}
}

// fromElsewhere reports whether the words around the secret at m (within
// norm[lo:hi], the secret's own words aside) say it comes from somewhere
// other than the tool's own work: the environment, the conversation, the
// person's files.
func fromElsewhere(t *text, m []int, lo, hi int) bool {
	return elsewhere.match(t, lo, m[0]) || elsewhere.match(t, m[1], hi)
}

// besides reports whether the sentence of a send at m makes it an extra,
// beside the tool's job: sending the person's files is a sync tool's job,
// sending them "as well" or "silently" is not.
func besides(t *text, m []int) bool {
	return extraRe.match(t, sentenceStart(t.norm, 0, m[0]), sentenceEnd(t.norm, m[1], len(t.norm)))
}

var extraRe = anyOf(`\b(?:also|as well|too|additionally|in addition|a copy|silently|quietly|secretly|every time|always|whatever)\b`)

// elsewhere: the secret comes from somewhere other than the tool's own work.
var elsewhere = anyOf(`\b(?:from the (?:environment|env)|environment|in the conversation|earlier|previously|mentioned|appeared|the user's|their|every|any other|all other|home)\b`)

// exfiltration finds data the tool's job does not explain being handed over
// or sent to an address.
func (s *scanner) exfiltration(t *text, hand *hands, places, secrets [][]int) {
	n := t.norm
	for _, m := range addressRe.findAll(t, 0, len(n)) {
		if exampleHost(n[m[0]:m[1]]) {
			continue
		}
		if m[0] > 0 && n[m[0]-1] == '=' {
			s.add(RuleExfil, High, t, t.excerpt(max(0, m[0]-12), m[1])) // an argument value: url=https://…
			return
		}
		lo, hi := max(0, m[0]-80), min(len(n), m[1]+80)
		for _, v := range sendRe.findAll(t, lo, hi) {
			if v[0] >= m[0] && v[0] < m[1] {
				continue // a word inside the address itself
			}
			s.add(RuleExfil, High, t, t.excerpt(min(m[0], v[0]), max(m[1], v[1])))
			return
		}
	}
	for _, m := range bulkSendRe.findAll(t, 0, len(n)) {
		if !negated(n, m[0]) && besides(t, m) {
			s.add(RuleExfil, High, t, t.excerpt(m[0], m[1]))
			return
		}
	}
	for _, m := range foreignDataRe.findAll(t, 0, len(n)) {
		lo, hi := max(0, m[0]-100), min(len(n), m[1]+100)
		if h := hand.within(lo, hi); h != nil {
			s.add(RuleExfil, High, t, t.excerpt(min(m[0], h[0]), max(m[1], h[1])))
			return
		}
	}
	for _, m := range secrets {
		lo, hi := max(0, m[0]-80), min(len(n), m[1]+120)
		if h := hand.within(lo, hi); h != nil && fromElsewhere(t, m, lo, hi) {
			s.add(RuleExfil, High, t, t.excerpt(min(m[0], h[0]), max(m[1], h[1])))
			return
		}
	}
	for _, m := range places {
		if h := hand.within(m[0], min(len(n), m[1]+100)); h != nil {
			s.add(RuleExfil, High, t, t.excerpt(m[0], h[1]))
			return
		}
	}
}
