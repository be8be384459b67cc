package ui

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/writes"
)

// The overview puts the servers that need a person first, the most urgent
// need first (latched writes, changed tools, broken, new), and says why.
func TestTriageOrdersByNeed(t *testing.T) {
	ok := gateway.Connection{State: "ready"}
	servers := []api.Server{
		{Name: "a-fine", Transport: "stdio", State: ok, Tools: approval.Counts{Approved: 3, Pending: 2, HeldBack: 2}},
		{Name: "b-new", Transport: "stdio", State: ok, Quarantined: true, Tools: approval.Counts{Pending: 2}},
		{Name: "c-broken", ConfigError: "config f: mcpServers.c-broken.comand: unknown field"},
		{Name: "d-down", Transport: "stdio", Quarantined: true, State: gateway.Connection{State: "backoff", Error: "exit status 1", Failures: 3, RetryAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
		{Name: "e-rug", Transport: "http", State: ok, Tools: approval.Counts{Changed: 1, Pending: 1}},
		{Name: "f-latched", Transport: "http", State: ok},
	}
	rows, sum := triage(servers, []writes.Latch{{Server: "f-latched", Tool: "write\x1b[2J"}})
	var order []string
	for _, r := range rows {
		order = append(order, r.Name)
	}
	if want := []string{"f-latched", "e-rug", "c-broken", "d-down", "b-new", "a-fine"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if want := []tally{{"with latched writes", 1}, {"with changed tools", 1}, {"not running", 2}, {"waiting for review", 1}}; !slices.Equal(sum, want) {
		t.Fatalf("summary %v, want %v", sum, want)
	}
	why := func(r serverRow) string {
		var b strings.Builder
		for _, n := range r.Needs {
			b.WriteString(n.What + ": " + n.Why + "\n")
		}
		return b.String()
	}
	for i, want := range [][]string{
		{"1 latched write(s)", `write\x1b[2J happened`},
		{"1 changed tool(s)", "1 pending tool(s)"},
		{"config entry not loaded", "comand: unknown field", "Fix the entry"},
		{"cannot connect", "exit status 1 (3 failed attempt(s); next at 2026-01-02 03:04:05 UTC)"},
		{"quarantined", "2 pending tool(s)"},
	} {
		for _, w := range want {
			if !strings.Contains(why(rows[i]), w) {
				t.Errorf("%s: %q lacks %q", rows[i].Name, why(rows[i]), w)
			}
		}
	}
	if len(rows[3].Needs) != 1 {
		t.Errorf("down, never seen, needs more than a connection: %v", rows[3].Needs)
	}
	if len(rows[5].Needs) != 0 {
		t.Errorf("a fine server needs %v", rows[5].Needs)
	}
}

// A description in the tools table is its first line, at most shortLen
// characters, escaped; the rest is there to expand.
func TestDescribeShortens(t *testing.T) {
	long := strings.Repeat("word ", 40) + "\nsecond line \u202e"
	d := describe([]byte(`{"title":"T\u200b","description":` + quote(long) + `}`))
	if !d.Long || len([]rune(d.Short)) > shortLen || !strings.HasSuffix(d.Short, "…") || strings.Contains(d.Short, "second") {
		t.Fatalf("short %q (long %v)", d.Short, d.Long)
	}
	if !strings.Contains(d.Full, "second line \\u202e") || d.Title != `T\u200b` {
		t.Fatalf("full %q, title %q: want all of it, escaped", d.Full, d.Title)
	}
	if d := describe([]byte(`{"description":"One line."}`)); d.Long || d.Short != "One line." {
		t.Fatalf("a one-line description: %+v", d)
	}
	if d := describe([]byte(`{"description":"First.\nSecond."}`)); !d.Long || d.Short != "First." {
		t.Fatalf("a two-line description: %+v", d)
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// Tools come in the order a reviewer takes them.
func TestReviewOrder(t *testing.T) {
	tools := []api.Tool{
		{Name: "approved", Status: approval.StatusApproved, Present: true},
		{Name: "gone", Status: approval.StatusPending},
		{Name: "held", Status: approval.StatusPending, Present: true, HeldBack: true},
		{Name: "new", Status: approval.StatusPending, Present: true},
		{Name: "blocked", Status: approval.StatusBlocked, Present: true},
		{Name: "rug", Status: approval.StatusChanged, Present: true},
	}
	reviewOrder(tools)
	var got []string
	for _, x := range tools {
		got = append(got, x.Name)
	}
	if want := []string{"rug", "new", "held", "blocked", "approved", "gone"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// A decision sent from a tool's page returns to that page; the form cannot
// send the browser anywhere else.
func TestDecisionReturnsToItsPage(t *testing.T) {
	u := newUI(t, &fakeAPI{})
	c := login(t, u)
	csrf := csrfOf(t, u, c)
	for _, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"tool": {"a/b"}, "from": {"tool"}}, "/ui/servers/s/tools/a%2Fb"},
		{url.Values{"tool": {"a"}}, "/ui/servers/s"},
		{url.Values{"tool": {"a", "b"}, "from": {"tool"}}, "/ui/servers/s"},
		{url.Values{"tool": {"a"}, "from": {"https://evil.example/"}}, "/ui/servers/s"},
	} {
		tc.form.Set("csrf", csrf)
		for _, action := range []string{"approve", "block"} {
			if w := serve(u, "POST", "/ui/servers/s/"+action, c.Value, tc.form); w.Header().Get("Location") != tc.want {
				t.Errorf("%s %v: back to %q, want %q", action, tc.form, w.Header().Get("Location"), tc.want)
			}
		}
	}
}

// A tool never approved is shown as its definition, field by field.
func TestDefineTool(t *testing.T) {
	fs := defineTool([]byte(`{"name":"t","description":"does <b>\u001b[2J","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`))
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"description", "inputSchema", "annotations"}) || fs[0].Text != `does <b>\x1b[2J` || !strings.Contains(fs[1].Text, `"type": "object"`) {
		t.Fatalf("fields %+v", fs)
	}
}
