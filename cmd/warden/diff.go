package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/wardenmcp/warden/internal/display"
)

// fieldOrder is the order fields of a tool definition are shown in; any
// other field follows, sorted.
var fieldOrder = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// definitionFields splits a tool definition (the JSON object the approval
// records keep) into its fields, each rendered as lines: a string field as
// its text, anything else as indented JSON with sorted keys. Characters
// that do not print (controls, zero-width, bidi controls...) are shown
// escaped (display.Text), so a hidden change is visible.
func definitionFields(def json.RawMessage) (map[string][]string, error) {
	out := map[string][]string{}
	if len(bytes.TrimSpace(def)) == 0 || string(bytes.TrimSpace(def)) == "null" {
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(def, &obj); err != nil {
		return nil, fmt.Errorf("tool definition is not a JSON object: %w", err)
	}
	for k, raw := range obj {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[k] = visibleLines(strings.Split(s, "\n"))
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil { // maps encode with sorted keys
			return nil, err
		}
		out[k] = visibleLines(strings.Split(strings.TrimRight(buf.String(), "\n"), "\n"))
	}
	return out, nil
}

// visibleLines escapes what would not show on a terminal, line by line.
func visibleLines(lines []string) []string {
	for i, l := range lines {
		lines[i] = display.Text(l)
	}
	return lines
}

// writeDefinitionDiff writes a unified-style diff of two tool definitions,
// field by field: a "@@ field @@" line opens each hunk, then lines marked
// " " (same), "-" (approved only) and "+" (current only). approved is empty
// for a tool never approved, so all of it shows as added. It returns the
// number of fields that differ.
func writeDefinitionDiff(w io.Writer, approved, current json.RawMessage) (int, error) {
	a, err := definitionFields(approved)
	if err != nil {
		return 0, fmt.Errorf("approved definition: %w", err)
	}
	b, err := definitionFields(current)
	if err != nil {
		return 0, fmt.Errorf("current definition: %w", err)
	}
	changes := fieldChanges(a, b)
	for _, c := range changes {
		la, inA := a[c.field]
		lb, inB := b[c.field]
		ops := lineDiff(la, lb)
		if !inA || !inB {
			fmt.Fprintf(w, "@@ %s @@\n", c.label)
			writeOps(w, ops)
			continue
		}
		for _, h := range hunks(ops, diffContext) {
			fmt.Fprintf(w, "@@ %s @@\n", c.label)
			writeOps(w, h)
		}
	}
	return len(changes), nil
}

// fieldChange is a field that differs between two definitions; its label
// says when it was added or removed.
type fieldChange struct{ field, label string }

// fieldChanges lists the fields of a and b that differ, in display order.
func fieldChanges(a, b map[string][]string) []fieldChange {
	var out []fieldChange
	for _, f := range fieldNames(a, b) {
		la, inA := a[f]
		lb, inB := b[f]
		if inA && inB && slices.Equal(la, lb) {
			continue
		}
		label := f
		switch {
		case !inA && len(a) > 0:
			label += " (added)"
		case !inB:
			label += " (removed)"
		}
		out = append(out, fieldChange{f, label})
	}
	return out
}

// changeSummary says in a few words how a definition changed: the fields
// that differ, or for one never approved, the start of its description.
func changeSummary(approved, current json.RawMessage) (string, error) {
	a, err := definitionFields(approved)
	if err != nil {
		return "", fmt.Errorf("approved definition: %w", err)
	}
	b, err := definitionFields(current)
	if err != nil {
		return "", fmt.Errorf("current definition: %w", err)
	}
	if len(a) == 0 {
		if d := b["description"]; len(d) > 0 {
			return "new: " + truncate(d[0], 60), nil
		}
		return "new", nil
	}
	var labels []string
	for _, c := range fieldChanges(a, b) {
		labels = append(labels, c.label)
	}
	if len(b) == 0 || len(labels) == 0 {
		return "changed (the daemon sent no definition to compare)", nil
	}
	return "changed: " + strings.Join(labels, ", "), nil
}

func writeOps(w io.Writer, ops []diffOp) {
	for _, o := range ops {
		fmt.Fprintf(w, "%c%s\n", o.kind, o.text)
	}
}

// fieldNames is the union of both field sets, in display order.
func fieldNames(a, b map[string][]string) []string {
	var names, rest []string
	for _, f := range fieldOrder {
		if _, ok := a[f]; ok {
			names = append(names, f)
		} else if _, ok := b[f]; ok {
			names = append(names, f)
		}
	}
	for _, m := range []map[string][]string{a, b} {
		for f := range m {
			if !slices.Contains(fieldOrder, f) && !slices.Contains(rest, f) {
				rest = append(rest, f)
			}
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

// diffOp is one line of a diff: kind ' ', '-' or '+'.
type diffOp struct {
	kind byte
	text string
}

// maxDiffCells bounds the longest-common-subsequence table; beyond it the
// changed middle is shown as all removed, then all added.
const maxDiffCells = 4 << 20

// lineDiff returns a minimal line diff of a and b (longest common
// subsequence), deletions before insertions within a change.
func lineDiff(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(ma), len(mb)
	if n*m > maxDiffCells {
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	} else {
		// lcs[i][j] is the LCS length of ma[i:] and mb[j:].
		lcs := make([][]int, n+1)
		for i := range lcs {
			lcs[i] = make([]int, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i]})
				i, j = i+1, j+1
			case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', ma[i]})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j]})
				j++
			}
		}
	}
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

// hunks cuts ops into groups of changes with up to context unchanged lines
// around each; groups whose context would touch are merged.
func hunks(ops []diffOp, context int) [][]diffOp {
	var out [][]diffOp
	start, end := -1, -1
	for i, o := range ops {
		if o.kind == ' ' {
			continue
		}
		lo, hi := max(0, i-context), min(len(ops), i+context+1)
		if start >= 0 && lo <= end {
			end = hi
			continue
		}
		if start >= 0 {
			out = append(out, ops[start:end])
		}
		start, end = lo, hi
	}
	if start >= 0 {
		out = append(out, ops[start:end])
	}
	return out
}
