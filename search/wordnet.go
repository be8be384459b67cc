package search

import (
	_ "embed"
	"sort"
	"strings"
	"sync"
)

//go:generate go run ./internal/wordnetgen

// wordnetTable is generated from WordNet 3.0 by internal/wordnetgen (run by
// hand with Debian's wordnet-base installed; the table is committed, so
// builds and tests need no WordNet): a line per word, sorted, with the
// index terms of its meanings, then "|" and the terms of broader meanings.
// WordNet's licence is in WORDNET-LICENSE.
//
//go:embed wordnet.txt
var wordnetTable string

// wordnetLines are the table's lines; they share the embedded text, so the
// table costs the heap only their headers (16,000 lines, 256 KiB), and
// that on first use, not at every start of the binary.
var wordnetLines = sync.OnceValue(func() []string {
	return strings.Split(strings.TrimSuffix(wordnetTable, "\n"), "\n")
})

// related returns what WordNet relates to the term t: terms of the same
// meaning or derived from it, and terms of broader meanings.
func related(t string) (same, broader []string) {
	lines := wordnetLines()
	prefix := t + " "
	i := sort.SearchStrings(lines, prefix)
	if i == len(lines) || !strings.HasPrefix(lines[i], prefix) {
		return nil, nil
	}
	s, b, _ := strings.Cut(lines[i][len(prefix):], "|")
	return strings.Fields(s), strings.Fields(b)
}
