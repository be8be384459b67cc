package search

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Terms splits text into index terms: words split at non-alphanumerics and
// at camel-case boundaries ("getFileInfo", "HTTPServer"), lower-cased,
// stop words dropped, each stemmed.
func Terms(text string) []string {
	var out []string
	for _, w := range words(text) {
		if stop()[w] {
			continue
		}
		out = append(out, Stem(w))
	}
	return out
}

func words(text string) []string {
	var out []string
	for _, run := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		n := len(out)
		out = camel(run, out)
		if len(out)-n > 1 {
			// "GitHub" is also asked for as "github".
			out = append(out, strings.ToLower(run))
		}
	}
	return out
}

// camel appends to out the parts of a run of letters and digits split at
// case and digit boundaries, lower-cased. It slices run rather than
// converting it: indexing is on the path of every re-index.
func camel(run string, out []string) []string {
	start := 0
	var prev, r rune
	for i, c := range run {
		if i == 0 {
			prev = c
			continue
		}
		r = c
		split := unicode.IsUpper(r) && unicode.IsLower(prev) || // fileInfo
			unicode.IsDigit(r) != unicode.IsDigit(prev) // utf8, v2
		if !split && unicode.IsUpper(r) && unicode.IsUpper(prev) { // HTTPServer: split before the S
			if next, _ := utf8.DecodeRuneInString(run[i+utf8.RuneLen(r):]); unicode.IsLower(next) {
				split = true
			}
		}
		if split {
			out = append(out, strings.ToLower(run[start:i]))
			start = i
		}
		prev = r
	}
	return append(out, strings.ToLower(run[start:]))
}

// Stem strips common English inflections so that "files", "filed" and
// "filing" meet, and "creation" meets "create". It is deliberately light:
// over-stemming merges words that mean different things.
func Stem(w string) string {
	if len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "es") && len(w) > 4 && strings.ContainsRune("sxz", rune(w[len(w)-3])):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	switch {
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		w = undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4:
		w = undouble(w[:len(w)-2])
	case (strings.HasSuffix(w, "tion") || strings.HasSuffix(w, "sion")) && len(w) > 6:
		w = w[:len(w)-3]
	}
	if strings.HasSuffix(w, "e") && len(w) > 3 {
		w = w[:len(w)-1]
	}
	return w
}

// undouble turns "runn" (from "running") back into "run".
func undouble(w string) string {
	if n := len(w); n > 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// stop and synonyms are built on first use, not by every process of the
// binary at start.
var stop = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be by can do does for from
		how i if in into is it its me my of on or so that the their then this to
		was we what when where which who will with you your please want need
		some any all via using use`) {
		m[w] = true
	}
	return m
})

type queryTerm struct {
	term   string
	weight float64
}

// queryTerms are a query's terms, each once, plus general synonyms at a
// lower weight (the words people ask with are rarely the words a tool's
// author wrote).
func queryTerms(q string) []queryTerm {
	seen := map[string]bool{}
	var out []queryTerm
	add := func(t string, w float64) {
		if !seen[t] {
			seen[t] = true
			out = append(out, queryTerm{t, w})
		}
	}
	terms := Terms(q)
	for _, t := range terms {
		add(t, 1)
	}
	for _, t := range terms {
		for _, s := range synonyms()[t] {
			add(s, wSynonym)
		}
	}
	return out
}

// synonymGroups are general-purpose: verbs and nouns every kind of tool
// uses, not words of any particular server.
var synonymGroups = [][]string{
	{"get", "fetch", "retrieve", "read", "show", "view", "open", "load", "see", "look"},
	{"list", "enumerate", "browse", "all"},
	{"create", "add", "new", "make", "insert", "write", "save", "store", "record", "remember"},
	{"delete", "remove", "erase", "drop", "destroy", "forget", "discard", "clear"},
	{"update", "edit", "modify", "change", "set", "replace", "patch", "fix", "rename"},
	{"search", "find", "query", "lookup", "locate", "filter", "match"},
	{"run", "execute", "invoke", "start", "launch", "trigger"},
	{"stop", "halt", "kill", "cancel", "terminate"},
	{"send", "post", "publish", "notify", "message"},
	{"move", "relocate", "transfer"},
	{"copy", "duplicate", "clone"},
	{"file", "document", "doc"},
	{"folder", "directory", "dir"},
	{"size", "metadata", "info", "detail", "stat", "property"},
	{"time", "date", "clock", "timezone"},
	{"web", "url", "page", "site", "website", "http"},
	{"issue", "ticket", "bug"},
	{"user", "person", "people", "account", "member"},
	{"note", "observation", "fact", "memo"},
	{"link", "relation", "connection", "relationship", "connect"},
	{"picture", "image", "photo", "screenshot"},
	{"sum", "add", "total", "plus"},
	{"repeat", "echo"},
	{"tree", "hierarchy", "structure", "recursive"},
	{"wait", "delay", "sleep", "long", "slow"},
	{"log", "history", "commit"},
}

var synonyms = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		var stems []string
		for _, w := range g {
			stems = append(stems, Stem(w))
		}
		for _, s := range stems {
			for _, o := range stems {
				if o != s {
					m[s] = append(m[s], o)
				}
			}
		}
	}
	return m
})
