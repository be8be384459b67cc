package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/display"
	"github.com/wardenmcp/warden/writes"
)

// table writes aligned columns; call flush when done. Its output is
// buffered: the column writer writes each cell and each run of padding on
// its own, a system call each on a terminal or pipe.
type table struct {
	buf *bufio.Writer
	tw  *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	buf := bufio.NewWriter(w)
	t := &table{buf: buf, tw: tabwriter.NewWriter(buf, 0, 4, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// row writes one row. Every cell is escaped (display.Escape): cells show
// server strings, and an escaped cell also stays on its row and in its
// column.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = display.Escape(c)
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() {
	_ = t.tw.Flush()
	_ = t.buf.Flush()
}

// shownNames lists names a server chose, escaped for the terminal.
func shownNames(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = display.Escape(n)
	}
	return strings.Join(out, ", ")
}

// shortHash is the first 12 hex digits of a "sha256:<hex>" pin.
func shortHash(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		h = h[:12]
	}
	if h == "" {
		return "-"
	}
	return h
}

// toolCounts summarises a server's tools by status, leaving out zeros.
func toolCounts(c approval.Counts) string {
	var parts []string
	for _, p := range []struct {
		n    int
		name string
	}{{c.Approved, "approved"}, {c.Pending, "pending"}, {c.Changed, "changed"}, {c.Blocked, "blocked"}, {c.Invalid, "invalid"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// classLabel is a tool's class, saying why when a destructive class comes
// from the MCP defaults (a tool that does not say it is safe is taken as
// destructive) rather than from the tool's own annotations.
func classLabel(t api.Tool) string {
	if t.Class != string(writes.ClassDestructive) || writes.Classify("", t.Annotations) != writes.ClassDestructive {
		return t.Class
	}
	switch {
	case t.Annotations == nil:
		return t.Class + " (no annotations: MCP default)"
	case t.Annotations.DestructiveHint == nil:
		return t.Class + " (no destructiveHint: MCP default)"
	}
	return t.Class
}

// truncate shortens s to at most n runes.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// ago is a short, rounded duration.
func ago(d time.Duration) string {
	switch {
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// stamp formats a time for tables, in local time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

// reportAnswer prints an approval answer, warns on stderr naming the tools
// still held, and returns errHeld when any are (exit 3).
func (g *globals) reportAnswer(server string, a *approval.Answer) error {
	if g.jsonOut {
		if err := g.printJSON(a); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.stdout, "%s: approved %d, blocked %d; still pending %d, still changed %d\n",
			server, a.ApprovedCount, a.BlockedCount, a.StillPending, a.StillChanged)
		if len(a.NotApproved) > 0 {
			fmt.Fprintf(g.stdout, "not approved: %s\n", shownNames(a.NotApproved))
		}
		if len(a.HeldBack) > 0 {
			fmt.Fprintf(g.stdout, "held back (--except), which approving all leaves: %s; to approve one, name it: warden review approve %s TOOL\n",
				shownNames(a.HeldBack), server)
		}
		if len(a.Flagged) > 0 {
			fmt.Fprintf(g.stdout, "with a high-severity finding, which approving all leaves: %s; see why: warden review %s; to approve one, name it: warden review approve %s TOOL; or all: warden review approve %s --all --force\n",
				shownNames(a.Flagged), server, server, server)
		}
	}
	return g.warnHeld(server, a)
}

// warnHeld warns about held tools and returns errHeld when there are any.
func (g *globals) warnHeld(server string, a *approval.Answer) error {
	held := a.StillPending + a.StillChanged
	if held == 0 {
		return nil
	}
	names := shownNames(a.HeldTools)
	if more := held - len(a.HeldTools); more > 0 {
		names += fmt.Sprintf(" and %d more", more)
	}
	fmt.Fprintf(g.stderr, "warning: %d tool(s) of %s still held (pending or changed), not listed or callable: %s\n", held, server, names)
	fmt.Fprintf(g.stderr, "review them with: warden review %s\n", server)
	return errHeld
}

// orDash is s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
