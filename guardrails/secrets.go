package guardrails

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RuleSecretParam is the format of a secret found by where it is rather
// than by its shape: a high-entropy value of a parameter whose name says
// it holds a secret (password, token, secret, api_key…). Every other
// format is a rule id of gitleaks' default rule set (aws-access-token,
// github-pat, slack-bot-token, stripe-access-token, gcp-api-key,
// openai-api-key, anthropic-api-key, private-key, jwt…).
const RuleSecretParam = "secret-parameter"

// MaxSecretScan bounds the bytes of a call's argument strings that
// FindSecrets reads, so a huge argument costs a bounded time (the scan is
// linear in what it reads); what lies beyond is not checked.
const MaxSecretScan = 1 << 20

// maxSecretFindings: a refusal names a few, not every one.
const maxSecretFindings = 3

// SecretFinding is a credential in a call's arguments: where and in which
// format, never the value.
type SecretFinding struct {
	// Path is where in the arguments: "token", "auth.key", "items[2]",
	// `headers["X-Api-Key"]`, "a key in headers" (a credential as an object
	// key; a key is masked in any path).
	Path string `json:"path"`
	Rule string `json:"rule"`
}

// FindSecrets returns the credentials a tool call's arguments (a JSON
// object) carry, at most a few, in document order. Arguments that are not
// JSON have none found.
func FindSecrets(args []byte) []SecretFinding {
	rs := loadSecretRules()
	var out []SecretFinding
	budget := MaxSecretScan
	walkStrings(args, MaxSecretScan, func(path []pathPart, s string, key bool) bool {
		if len(s) > budget {
			s = s[:budget]
		}
		budget -= len(s)
		rule := ""
		rs.each(s, func(r *secretRule, _, _ int) bool {
			rule = r.id
			return false
		})
		if rule == "" && !key && len(path) > 0 && path[len(path)-1].key != "" && secretName(path[len(path)-1].key) && secretValue(rs, s) {
			rule = RuleSecretParam
		}
		if rule != "" {
			where := pathString(path)
			if key {
				where = "a key in " + where
			}
			out = append(out, SecretFinding{Path: where, Rule: rule})
		}
		return len(out) < maxSecretFindings && budget > 0
	})
	return out
}

// MaskSecrets returns s with each credential in a known format replaced by
// "[REDACTED:<rule>]"; s itself when it holds none. Callers bound s: the
// scan is linear, with a constant of up to the rules' number.
func MaskSecrets(s string) string {
	type span struct {
		lo, hi int
		rule   string
	}
	var spans []span
	loadSecretRules().each(s, func(r *secretRule, lo, hi int) bool {
		spans = append(spans, span{lo, hi, r.id})
		return true
	})
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.lo - b.lo })
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		if sp.lo < at { // overlaps one already masked
			at = max(at, sp.hi)
			continue
		}
		b.WriteString(s[at:sp.lo])
		b.WriteString("[REDACTED:" + sp.rule + "]")
		at = sp.hi
	}
	b.WriteString(s[at:])
	return b.String()
}

// each calls yield with every credential in s, as a rule and the secret's
// offsets, until yield returns false. A rule runs only when s holds one of
// its keywords, and only over the part of s a match holding them can span.
func (rs *secretRules) each(s string, yield func(r *secretRule, lo, hi int) bool) {
	type region struct{ lo, hi int }
	var regions map[int32]region // by rule; nil until a keyword is seen
	var order []int32
	a := rs.auto
	n := 0
	for i := 0; i < len(s); i++ {
		n = a.step(n, a.class[s[i]])
		for _, kw := range a.out[n] {
			lo := i + 1 - len(rs.keywords[kw])
			for _, r := range rs.byKW[kw] {
				if regions == nil {
					regions = map[int32]region{}
				}
				g, seen := regions[r]
				if !seen {
					order = append(order, r)
					g = region{lo, i + 1}
				}
				regions[r] = region{min(g.lo, lo), i + 1}
			}
		}
	}
	for _, id := range order {
		r, g := rs.rules[id], regions[id]
		re := r.compiled() // (and maxLen with it)
		lo, hi := 0, len(s)
		if r.maxLen > 0 { // a match holding a keyword lies within maxLen of it
			lo, hi = max(0, g.lo-r.maxLen-utf8.UTFMax), min(len(s), g.hi+r.maxLen+utf8.UTFMax)
		}
		for _, m := range re.FindAllStringSubmatchIndex(s[lo:hi], -1) {
			slo, shi := secretGroup(r, m)
			secret, match := s[lo+slo:lo+shi], s[lo+m[0]:lo+m[1]]
			if r.entropy > 0 && entropy(secret) <= r.entropy || rs.allowed(r, secret, match, line(s, lo+m[0], lo+m[1])) {
				continue
			}
			if !yield(r, lo+slo, lo+shi) {
				return
			}
		}
	}
}

// secretGroup is where the secret is in a match: the rule's group, else
// its first non-empty group, else the whole match (as gitleaks reads it).
func secretGroup(r *secretRule, m []int) (int, int) {
	if r.group > 0 && 2*r.group+1 < len(m) && m[2*r.group] >= 0 {
		return m[2*r.group], m[2*r.group+1]
	}
	for g := 1; 2*g+1 < len(m); g++ {
		if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
			return m[2*g], m[2*g+1]
		}
	}
	return m[0], m[1]
}

func (rs *secretRules) allowed(r *secretRule, secret, match, line string) bool {
	if rs.global.allows(secret, match, line) {
		return true
	}
	for i := range r.allow {
		if r.allow[i].allows(secret, match, line) {
			return true
		}
	}
	return false
}

// line is the line of s holding s[lo:hi].
func line(s string, lo, hi int) string {
	start := strings.LastIndexByte(s[:lo], '\n') + 1
	end := strings.IndexByte(s[hi:], '\n')
	if end < 0 {
		return s[start:]
	}
	return s[start : hi+end]
}

// entropy is s's Shannon entropy in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	e, inv := 0.0, 1/float64(len(s))
	for _, c := range counts {
		if c > 0 {
			f := float64(c) * inv
			e -= f * math.Log2(f)
		}
	}
	return e
}

// Words of a parameter's name that say it holds a secret, and words that
// say it holds something about one (its name, type, length, where it is)
// or a token that is no credential (a page's cursor).
var (
	secretWords = map[string]bool{"password": true, "passwd": true, "passphrase": true, "pwd": true, "secret": true,
		"token": true, "apikey": true, "credential": true, "credentials": true, "creds": true, "bearer": true, "privatekey": true}
	keyQualifiers = map[string]bool{"api": true, "access": true, "private": true, "secret": true, "signing": true,
		"client": true, "encryption": true, "master": true, "auth": true, "license": true}
	notSecretWords = map[string]bool{"page": true, "cursor": true, "next": true, "continuation": true, "count": true,
		"limit": true, "max": true, "min": true, "type": true, "name": true, "id": true, "ids": true, "url": true, "uri": true,
		"endpoint": true, "path": true, "file": true, "length": true, "size": true, "expiry": true, "expires": true,
		"hint": true, "policy": true, "format": true, "field": true, "usage": true, "tokens": true}
)

// secretName reports whether a parameter's name says it holds a secret:
// password, api_key, clientSecret, x-auth-token; not max_tokens,
// page_token or secret_name.
func secretName(name string) bool {
	words := paramWords(name)
	secret := false
	for i, w := range words {
		switch {
		case notSecretWords[w]:
			return false
		case secretWords[w], w == "key" && i > 0 && keyQualifiers[words[i-1]]:
			secret = true
		}
	}
	return secret
}

// paramWords splits a name at case changes and non-letters, lower-cased:
// "xApiKey" → x, api, key.
func paramWords(name string) []string {
	var words []string
	start := -1
	prevLower := false
	for i, r := range name {
		letter := unicode.IsLetter(r) || unicode.IsDigit(r)
		if !letter || (unicode.IsUpper(r) && prevLower) {
			if start >= 0 {
				words = append(words, strings.ToLower(name[start:i]))
			}
			start = -1
		}
		if letter && start < 0 {
			start = i
		}
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	if start >= 0 {
		words = append(words, strings.ToLower(name[start:]))
	}
	return words
}

// secretValue reports whether a value of a secret-named parameter looks
// like a secret rather than a placeholder or prose: one word of at least 8
// bytes, varied enough (entropy over 3 bits: 8 distinct bytes at least),
// that gitleaks' global allowlist (${VAR}, {{ template }}, paths) does not
// excuse.
func secretValue(rs *secretRules, s string) bool {
	if len(s) < 8 || len(s) > 4096 || strings.ContainsFunc(s, unicode.IsSpace) || entropy(s) <= 3 {
		return false
	}
	return !rs.global.allows(s, s, s)
}

// pathPart is one step into the arguments: an object's key, or an index.
type pathPart struct {
	key   string
	index int
}

// pathString renders a path: a.b[2]["odd key"]. Long keys are cut.
func pathString(path []pathPart) string {
	var b strings.Builder
	for i, p := range path {
		switch {
		case p.key == "":
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		case MaskSecrets(p.key) != p.key:
			// A credential as a key: named by its format only.
			b.WriteString("[" + strconv.Quote(MaskSecrets(p.key)) + "]")
		case plainKey(p.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p.key)
		default:
			k := p.key
			if len(k) > 64 {
				k = strings.ToValidUTF8(k[:64], "") + "…"
			}
			b.WriteString("[" + strconv.Quote(k) + "]")
		}
	}
	if b.Len() == 0 {
		return "(the arguments)"
	}
	return b.String()
}

func plainKey(k string) bool {
	if k == "" || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !asciiWord(c) && c != '-' {
			return false
		}
	}
	return true
}
