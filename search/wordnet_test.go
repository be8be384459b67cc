package search

import (
	"slices"
	"strings"
	"testing"
)

// The table is looked up by binary search: it must stay sorted, one line a
// word, each word once.
func TestWordnetTableSorted(t *testing.T) {
	lines := wordnetLines()
	if len(lines) < 1000 {
		t.Fatalf("%d lines: the table is missing or cut", len(lines))
	}
	if !slices.IsSorted(lines) {
		t.Fatal("wordnet.txt is not sorted: regenerate it (cd search && go generate)")
	}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 || (i > 0 && strings.Fields(lines[i-1])[0] == f[0]) {
			t.Fatalf("line %d %q: want a word once, with at least one related term", i+1, l)
		}
	}
	if same, broader := related(Stem("refund")); !slices.Contains(same, Stem("return")) || !slices.Contains(broader, Stem("payment")) {
		t.Errorf("refund relates to %q, broader %q: want return, and payment as broader", same, broader)
	}
}

// A query's word reaches a tool that says it in other words, and a tool
// that uses the query's own word still ranks first.
func TestWordnetExpansion(t *testing.T) {
	x := New()
	x.Set("pay", []Doc{
		{Key: "pay__create_invoice", Server: "pay", Tool: "create_invoice", Description: "Create an invoice for a customer"},
		{Key: "pay__list_customers", Server: "pay", Tool: "list_customers", Description: "List customers"},
	})
	if got := keys(x.Search("bill a client", "", 10, nil), 1); got != "pay__create_invoice" {
		t.Errorf("bill a client: best %q, want pay__create_invoice through WordNet (bill: invoice)", got)
	}
	x.Set("ledger", []Doc{{Key: "ledger__bill", Server: "ledger", Tool: "bill", Description: "Bill a client"}})
	if got := keys(x.Search("bill a client", "", 10, nil), 1); got != "ledger__bill" {
		t.Errorf("bill a client: best %q, want ledger__bill, which says the words", got)
	}
}
