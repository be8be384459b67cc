package ui

import (
	"encoding/json"
	"strings"

	"github.com/wardenmcp/warden/internal/display"
)

// fieldDiff is one part of a tool's definition, approved beside current,
// line by line.
type fieldDiff struct {
	Name    string
	Changed bool
	Rows    []diffRow
}

// diffRow is one line of each side; a side is empty where the other side
// has a line it lacks. Old marks a line only the approved side has, New one
// only the current side has.
type diffRow struct {
	Left, Right string
	Old, New    bool
	NoLeft      bool
	NoRight     bool
}

// toolFields are the parts of a definition shown, in order.
var toolFields = []string{"title", "description", "inputSchema", "outputSchema", "annotations", "_meta", "icons"}

// fieldView is one part of a definition on its own, its lines escaped and
// joined: a tool never approved is shown as it is, not against nothing.
type fieldView struct {
	Name, Text string
}

// parts splits a definition into its fields.
func parts(def json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(def, &m)
	return m
}

// defineTool lays out a definition's fields, in toolFields' order.
func defineTool(def json.RawMessage) []fieldView {
	m := parts(def)
	var out []fieldView
	for _, f := range toolFields {
		if lines := fieldLines(f, m[f]); len(lines) > 0 {
			out = append(out, fieldView{Name: f, Text: strings.Join(lines, "\n")})
		}
	}
	return out
}

// compareTool lays the approved and current definitions side by side.
func compareTool(approved, current json.RawMessage) []fieldDiff {
	old, cur := parts(approved), parts(current)
	var out []fieldDiff
	for _, f := range toolFields {
		a, b := fieldLines(f, old[f]), fieldLines(f, cur[f])
		if len(a) == 0 && len(b) == 0 {
			continue
		}
		rows := diffLines(a, b)
		changed := false
		for _, r := range rows {
			changed = changed || r.Old || r.New
		}
		out = append(out, fieldDiff{Name: f, Changed: changed, Rows: rows})
	}
	return out
}

// fieldLines is a field's value as lines, each escaped (display.Text): a
// description as its text, anything else as indented JSON.
func fieldLines(name string, v json.RawMessage) []string {
	lines := rawLines(name, v)
	for i, l := range lines {
		lines[i] = display.Text(l)
	}
	return lines
}

func rawLines(name string, v json.RawMessage) []string {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	var s string
	if name != "inputSchema" && name != "outputSchema" && json.Unmarshal(v, &s) == nil {
		return strings.Split(s, "\n")
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return []string{string(v)}
	}
	b, _ := json.MarshalIndent(x, "", "  ")
	return strings.Split(string(b), "\n")
}

// diffLines aligns a and b on their longest common subsequence; the lines
// between are paired up row by row.
func diffLines(a, b []string) []diffRow {
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var rows []diffRow
	var dels, adds []string
	flush := func() {
		for k := 0; k < max(len(dels), len(adds)); k++ {
			r := diffRow{NoLeft: k >= len(dels), NoRight: k >= len(adds)}
			if !r.NoLeft {
				r.Left, r.Old = dels[k], true
			}
			if !r.NoRight {
				r.Right, r.New = adds[k], true
			}
			rows = append(rows, r)
		}
		dels, adds = dels[:0], adds[:0]
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			flush()
			rows = append(rows, diffRow{Left: a[i], Right: b[j]})
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] >= lcs[i+1][j]):
			adds = append(adds, b[j])
			j++
		default:
			dels = append(dels, a[i])
			i++
		}
	}
	flush()
	return rows
}
