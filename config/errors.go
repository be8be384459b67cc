package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Error is a problem with a config file. It names the file, the field (a
// dotted path such as "mcpServers.remote.callTimeout"), what is wrong and how
// to fix it, so that a person can act on it without reading Warden's code.
//
// Messages never contain the value of an expanded ${env:NAME} reference, a
// header value or an env value: they are secrets.
type Error struct {
	File    string // file the config came from; "" when parsed from memory
	Field   string // dotted field path; "" for problems with the whole file
	Problem string // what is wrong
	Fix     string // what to write instead; may be ""

	// Line and Column locate the problem in the file when known (1-based).
	// Error() shows them only when there is no Field to name, as for
	// syntax errors.
	Line, Column int

	err error // underlying cause, for errors.Is/As
}

// Error reads "config FILE: FIELD: PROBLEM; FIX".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.File != "" {
		b.WriteString(" ")
		b.WriteString(e.File)
	}
	b.WriteString(": ")
	switch {
	case e.Field != "":
		b.WriteString(e.Field)
		b.WriteString(": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	}
	b.WriteString(e.Problem)
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// Unwrap returns the underlying cause, such as an *fs.PathError.
func (e *Error) Unwrap() error { return e.err }

// bareKey matches map keys that can be shown unquoted in a field path.
var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// join appends a map key or field name to a dotted field path, quoting keys
// that would make the path ambiguous (`env["A.B"]`).
func join(path, key string) string {
	if !bareKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// index appends a list index to a field path.
func index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// aliases maps field names that other MCP hosts or habits use to Warden's.
var aliases = map[string]string{
	"environment": "env",
	"cmd":         "command",
	"endpoint":    "url",
	"workdir":     "cwd",
}

// suggest returns the known field closest to name, or "" when none is close.
func suggest(name string, known []string) string {
	if a, ok := aliases[strings.ToLower(name)]; ok {
		for _, k := range known {
			if k == a {
				return a
			}
		}
	}
	best, bestD := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		if d := distance(strings.ToLower(name), strings.ToLower(k)); d < bestD && d < len(k)/2+1 {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the Levenshtein edit distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
