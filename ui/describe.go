package ui

import (
	"encoding/json"
	"strings"

	"github.com/wardenmcp/warden/internal/display"
)

// shortLen bounds a description in the tools table, in characters: about
// a line of the table, so 400 tools stay a list one can scan.
const shortLen = 120

// description is a tool's title and description as the tools table shows
// them: Short is the first line, cut at shortLen; Full is all of it; both
// escaped (package display). Long says Full has more than Short.
type description struct {
	Title, Short, Full string
	Long               bool
}

// describe reads the title and description out of a definition (a tool's
// current one, canonical JSON).
func describe(def json.RawMessage) description {
	var d struct {
		Title       string `json:"title"`
		Description string `json:"description"`
	}
	_ = json.Unmarshal(def, &d)
	full := strings.TrimSpace(d.Description)
	short, _, _ := strings.Cut(full, "\n")
	short = strings.TrimSpace(short)
	if r := []rune(short); len(r) > shortLen {
		short = strings.TrimSpace(string(r[:shortLen-1])) + "…"
	}
	return description{Title: display.Escape(d.Title), Short: display.Escape(short), Full: display.Text(full), Long: short != full}
}
