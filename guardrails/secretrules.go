package guardrails

import (
	_ "embed"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

// gitleaksTOML is gitleaks' default rule set (config/gitleaks.toml of
// github.com/zricethezav/gitleaks/v8 at the version go.mod requires; MIT
// licence, GITLEAKS-LICENSE beside it). TestGitleaksRulesAreTheModules
// checks that it is that module's file byte for byte.
//
//go:embed gitleaks.toml
var gitleaksTOML []byte

// Rules of the file left out: generic-api-key reads "name = value" in free
// text and flags prose and code alike; Warden judges a parameter's name
// itself (RuleSecretParam). Rules that only look at file paths have no
// meaning for a call.
var skippedRules = map[string]bool{"generic-api-key": true}

// secretRule is one credential format. Its regexps are compiled the first
// time a text holds one of its keywords, so a rule never needed costs no
// memory.
type secretRule struct {
	id      string
	src     string
	group   int     // the capture group holding the secret; 0: the first non-empty one
	entropy float64 // the secret's Shannon entropy must exceed it (0: no bound)
	maxLen  int     // bytes a match spans at most; 0: no bound known
	allow   []secretAllow

	once sync.Once
	re   *regexp.Regexp
}

// secretAllow is one of a rule's allowlists: a secret it matches is not
// one (gitleaks' semantics, without the path conditions).
type secretAllow struct {
	and       bool   // both regexes and stopwords must match
	target    string // what regexes read: "secret" (default), "match" or "line"
	regexes   []string
	stopwords []string
	res       []*regexp.Regexp // compiled with the rule
}

// secretRules is the rule set, parsed once on first use.
type secretRules struct {
	rules    []*secretRule
	byKW     [][]int32 // keyword id → rules that name it
	keywords []string
	auto     *automaton // over keywords, ASCII case folded
	global   secretAllow
}

var loadSecretRules = sync.OnceValue(func() *secretRules {
	rs, err := parseSecretRules(gitleaksTOML)
	if err != nil {
		panic("guardrails: the embedded gitleaks rules do not load: " + err.Error())
	}
	return rs
})

func parseSecretRules(b []byte) (*secretRules, error) {
	type allowlist struct {
		Condition   string   `toml:"condition"`
		Paths       []string `toml:"paths"`
		RegexTarget string   `toml:"regexTarget"`
		Regexes     []string `toml:"regexes"`
		StopWords   []string `toml:"stopwords"`
	}
	var file struct {
		Allowlist allowlist `toml:"allowlist"`
		Rules     []struct {
			ID          string      `toml:"id"`
			Regex       string      `toml:"regex"`
			Path        string      `toml:"path"`
			SecretGroup int         `toml:"secretGroup"`
			Entropy     float64     `toml:"entropy"`
			Keywords    []string    `toml:"keywords"`
			Allowlists  []allowlist `toml:"allowlists"`
		} `toml:"rules"`
	}
	if err := toml.Unmarshal(b, &file); err != nil {
		return nil, err
	}
	rs := &secretRules{global: secretAllow{regexes: file.Allowlist.Regexes, stopwords: file.Allowlist.StopWords}}
	if err := rs.global.compile(); err != nil {
		return nil, err
	}
	kwIDs := map[string]int32{}
	for _, fr := range file.Rules {
		if fr.Regex == "" || fr.Path != "" || len(fr.Keywords) == 0 || skippedRules[fr.ID] {
			continue
		}
		r := &secretRule{id: fr.ID, src: fr.Regex, group: fr.SecretGroup, entropy: fr.Entropy}
		for _, a := range fr.Allowlists {
			if len(a.Paths) > 0 {
				continue // about files: never true of a call
			}
			r.allow = append(r.allow, secretAllow{and: strings.EqualFold(a.Condition, "AND"), target: a.RegexTarget,
				regexes: a.Regexes, stopwords: a.StopWords})
		}
		id := int32(len(rs.rules))
		rs.rules = append(rs.rules, r)
		for _, kw := range fr.Keywords {
			kw = strings.ToLower(kw)
			k, ok := kwIDs[kw]
			if !ok {
				k = int32(len(rs.keywords))
				kwIDs[kw] = k
				rs.keywords = append(rs.keywords, kw)
				rs.byKW = append(rs.byKW, nil)
			}
			rs.byKW[k] = append(rs.byKW[k], id)
		}
	}
	rs.auto = build(rs.keywords)
	for c := 'A'; c <= 'Z'; c++ {
		rs.auto.class[c] = rs.auto.class[c+'a'-'A'] // keywords are matched case-insensitively
	}
	return rs, nil
}

// compiled returns the rule's regexp, compiling it and its allowlists, and
// taking its maxLen, on first use: parsing every rule at load cost several
// MB of garbage at the daemon's start, where the first server's stderr is
// masked (TestEveryRuleCompiles checks them all).
func (r *secretRule) compiled() *regexp.Regexp {
	r.once.Do(func() {
		r.re = regexp.MustCompile(r.src)
		if tree, err := syntax.Parse(r.src, syntax.Perl); err == nil {
			if n := maxLength(tree.Simplify()); n < unboundedMatch {
				r.maxLen = n
			}
		}
		for i := range r.allow {
			if err := r.allow[i].compile(); err != nil {
				r.allow = nil // a broken allowlist allows nothing
				break
			}
		}
	})
	return r.re
}

func (a *secretAllow) compile() error {
	for _, src := range a.regexes {
		re, err := regexp.Compile(src)
		if err != nil {
			return err
		}
		a.res = append(a.res, re)
	}
	return nil
}

// allows reports whether the allowlist excuses secret, found as match on
// line.
func (a *secretAllow) allows(secret, match, line string) bool {
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	reOK := false
	for _, re := range a.res {
		if re.MatchString(target) {
			reOK = true
			break
		}
	}
	stopOK := false
	if len(a.stopwords) > 0 {
		lower := strings.ToLower(secret)
		for _, w := range a.stopwords {
			if strings.Contains(lower, w) {
				stopOK = true
				break
			}
		}
	}
	if a.and {
		return (len(a.res) == 0 || reOK) && (len(a.stopwords) == 0 || stopOK)
	}
	return reOK || stopOK
}
