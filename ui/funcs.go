package ui

import (
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/display"
)

// stamp shows a time to a person, in UTC: the page does not know the
// browser's zone.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

var funcs = template.FuncMap{
	"short": func(h string) string {
		h = strings.TrimPrefix(h, "sha256:")
		if len(h) > 12 {
			return h[:12]
		}
		return h
	},
	"stamp":      stamp,
	"loaded":     loaded,
	"seen":       seen,
	"esc":        url.PathEscape,
	"shown":      display.Escape, // a server's string as text: see package display
	"text":       display.Text,   // a server's text of several lines
	"describe":   describe,
	"byAll":      byAll,
	"approvable": approvable,
	"blockable":  blockable,
	"ms":         func(us int64) string { return strconv.FormatFloat(float64(us)/1000, 'f', 1, 64) },
	// hints are a tool's annotations in words.
	"hints": func(a *mcp.ToolAnnotations) []string {
		if a == nil {
			return nil
		}
		var out []string
		if a.ReadOnlyHint {
			out = append(out, "read-only")
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			out = append(out, "destructive")
		}
		if a.IdempotentHint {
			out = append(out, "idempotent")
		}
		if a.OpenWorldHint != nil && *a.OpenWorldHint {
			out = append(out, "open world")
		}
		return out
	},
}
