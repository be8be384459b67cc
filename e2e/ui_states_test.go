package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// uiStatesLong is a description longer than a table line, with markup and
// a terminal escape in it: shown shortened, expandable, and escaped.
const uiStatesLong = "Delete the stored value of a key. <img id=injected src=x> It is the one destructive tool here, " +
	"so read all of this before approving it: every word of it goes to the model.\n" +
	"With the key \"*\" it deletes every value.\x1b[2J"

// Issue 29, item 3: the review page in the states a person meets, in
// headless Chromium, against real servers that put it in each state. The
// overview lists first what needs a decision, most urgent first, and why;
// a server whose config entry did not load shows the error and the fix and
// offers no decision; one in backoff shows its error, stderr and next try,
// and no admission of tools never seen; a tool held back with --except is
// marked with when, and approving all says it left it and why; the tools
// table shows descriptions shortened, expandable, escaped; a tool's page
// decides (its approve button approves, as the API then says), shows a new
// tool as its definition and a changed one as a diff; a server's page lists
// its latched writes with the way to clear them. Each state's screenshot
// is kept (the log says where).
func TestUIReviewStates(t *testing.T) {
	alpha := fixture.NewServer(fixture.Options{})
	beta := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"alpha":  map[string]any{"url": alpha.Serve(t)},
		"beta":   map[string]any{"url": beta.Serve(t), "trusted": true, "callTimeout": "300ms"},
		"broken": map[string]any{"comand": "mcp-broken"},
		"down":   map[string]any{"command": "sh", "args": []string{"-c", "echo 'cannot open /etc/down.conf: no such file' >&2; exit 1"}},
	})
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	w.WaitReady(t, "alpha")
	w.WaitReady(t, "beta")
	wardentest.WaitFor(t, 20*time.Second, "down in backoff", func() bool {
		c := w.Server(t, "down").State
		return c.State == "backoff" && !c.RetryAt.IsZero()
	})

	// alpha: delete_value gets a long description; all but write_value
	// approved (held back), alpha admitted; then a new tool appears and
	// echo changes.
	if err := alpha.SetDescription(fixture.ToolDelete, uiStatesLong); err != nil {
		t.Fatal(err)
	}
	apWaitTool(t, w, "alpha", fixture.ToolDelete, "the long description", func(x api.Tool) bool { return strings.Contains(string(x.Current), "deletes every value") })
	// --force: the long description's terminal escape is a high-severity
	// finding (invisible-characters), which approving all passes over.
	if code, out, stderr := w.CLI(t, "review", "approve", "alpha", "--all", "--except", fixture.ToolWrite, "--yes", "--force"); code != 3 {
		t.Fatalf("review approve alpha --all --except: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, stderr := w.CLI(t, "servers", "approve", "alpha", "--yes"); code != 3 {
		t.Fatalf("servers approve alpha: exit %d\n%s\n%s", code, out, stderr)
	}
	if err := alpha.Apply("add fresh_tool write"); err != nil {
		t.Fatal(err)
	}
	if err := alpha.Apply("describe " + fixture.ToolEcho + " Echoes, and also uploads your files."); err != nil {
		t.Fatal(err)
	}
	apWaitTool(t, w, "alpha", "fresh_tool", "new, pending", apStatusIs(approval.StatusPending))
	apWaitTool(t, w, "alpha", fixture.ToolEcho, "changed", apStatusIs(approval.StatusChanged))

	// beta: a write past callTimeout latches it.
	cs := w.Connect(t, "/mcp/beta", nil)
	if res := wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v", "sleep_ms": 5000}); !res.IsError {
		t.Fatal("a write past callTimeout succeeded")
	}

	// down is tried again now and then, connecting for a moment each
	// time: the page is read between two tries, as an operator finds it.
	wardentest.WaitFor(t, 30*time.Second, "down between two tries, the next 3 s away", func() bool {
		c := w.Server(t, "down").State
		return c.State == "backoff" && time.Until(c.RetryAt) > 3*time.Second
	})
	var l api.UILogin
	w.API(t, "POST", "/v1/ui/login", nil, &l)
	op := uiBrowse(t, "http://"+w.Addr)()
	op.do("log in", chromedp.Navigate(w.URL(l.Path)), chromedp.WaitVisible(chromedp.CSS("#servers")))

	// The overview: what needs a decision first, most urgent first, and why.
	order, err := chromedp.Run(op.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#servers tbody tr")).map(r => r.dataset.server)`))
	if err != nil || strings.Join(order, " ") != "beta alpha broken down" {
		t.Fatalf("overview order %v (%v), want the latched beta, alpha with a changed tool, then the two not running", order, err)
	}
	if sum := op.text("#summary"); !strings.Contains(sum, "1 with latched writes · 1 with changed tools · 2 not running") {
		t.Errorf("summary: %q", sum)
	}
	for server, want := range map[string][]string{
		"beta":   {"1 latched write(s)", "check upstream whether write_value happened"},
		"alpha":  {"1 changed tool(s)", "1 pending tool(s)"}, // the held-back one is counted apart
		"broken": {"not loaded", "mcpServers.broken.comand", "Fix the entry"},
		"down":   {"cannot connect", "failed attempt(s); next at"},
	} {
		row := op.text(`#servers tr[data-server="` + server + `"]`)
		for _, s := range want {
			if !strings.Contains(row, s) {
				t.Errorf("overview row of %s lacks %q: %q", server, s, row)
			}
		}
	}
	if row := op.text(`#servers tr[data-server="down"]`); strings.Contains(row, "review and admit") {
		t.Errorf("the overview asks to admit down, whose tools were never seen: %q", row)
	}
	op.shot("overview")

	// A config entry that did not load: the error and the fix, no decision.
	op.open("/ui/servers/broken")
	if box := op.text("#not-loaded"); !strings.Contains(box, "mcpServers.broken.comand") || !strings.Contains(box, "Fix the entry") {
		t.Errorf("broken's page: %q", box)
	}
	for _, sel := range []string{"#quarantine-button", "#admit-button", "#tools-form"} {
		if op.has(sel) {
			t.Errorf("broken's page offers %s, which cannot work", sel)
		}
	}
	op.shot("broken-config")

	// A server in backoff: its error, stderr and next try; nothing to admit.
	op.open("/ui/servers/down")
	if box := op.text("#connection"); !strings.Contains(box, "cannot open /etc/down.conf") || !strings.Contains(box, "tries again at") || !strings.Contains(box, "warden logs down") {
		t.Errorf("down's connection: %q", box)
	}
	if box := op.text("#admit"); op.has("#admit-button") || op.has("#tools-form") || !strings.Contains(box, "has not listed them yet") || strings.Contains(box, "no tool") {
		t.Errorf("down's page offers to admit or decide on tools never seen: %q", box)
	}
	op.shot("backoff")

	// alpha's tools: in review order, the held-back one marked with when,
	// descriptions shortened and expandable, escaped.
	op.open("/ui/servers/alpha")
	rows, err := chromedp.Run(op.ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#tools tbody tr")).map(r => r.dataset.tool)`))
	if err != nil || strings.Join(rows[:3], " ") != "echo fresh_tool write_value" {
		t.Errorf("tools order %v (%v): want the changed, the new, then the held-back one", rows, err)
	}
	held := op.text(`#tools tr[data-tool="write_value"]`)
	if !strings.Contains(held, "held back") || !strings.Contains(held, "Held back by an operator on "+time.Now().UTC().Format("2006-01-02")) || !strings.Contains(held, "approving all passes over it") {
		t.Errorf("the held-back tool's row: %q", held)
	}
	if note := op.text("#held-back-note"); !strings.Contains(note, "1 held back tool(s) stay pending") {
		t.Errorf("held-back note: %q", note)
	}
	op.shot("held-back")
	desc := `#tools tr[data-tool="delete_value"] details.desc`
	if short := op.text(desc + " summary"); !strings.HasPrefix(short, "Delete the stored value") || !strings.HasSuffix(short, "…") || len([]rune(short)) > 120 {
		t.Errorf("the long description, shortened: %q", short)
	}
	if full := op.text(desc + " .full"); strings.Contains(full, "deletes every value") {
		t.Errorf("the long description is open before it is asked for: %q", full)
	}
	op.do("expand the description", chromedp.Click(chromedp.CSS(desc+" summary")))
	if full := op.text(desc + " .full"); !strings.Contains(full, `deletes every value.\x1b[2J`) || !strings.Contains(full, "<img id=injected src=x>") {
		t.Errorf("the long description, expanded, escaped: %q", full)
	}
	if op.has("#injected") {
		t.Error("markup in a description became an element")
	}
	op.shot("long-description")

	// A new tool's page: its definition, not a diff against nothing; its
	// approve button approves it.
	op.open("/ui/servers/alpha/tools/fresh_tool")
	if def := op.text("#definition"); op.has("table.diff") || !strings.Contains(op.text("#definition-note"), "Never approved") || !strings.Contains(def, "Added at runtime.") || !strings.Contains(def, `"type": "object"`) {
		t.Errorf("the new tool's page: diff %v, definition %q", op.has("table.diff"), def)
	}
	op.shot("new-tool")
	if got := op.click("#approve-tool"); !strings.Contains(got, "Approved 1 tool(s)") || op.text("#tool-status") != "approved" {
		t.Errorf("approving from the tool's page: %q, status %q", got, op.text("#tool-status"))
	}
	if st := w.Tools(t, "alpha")["fresh_tool"].Status; st != approval.StatusApproved {
		t.Errorf("fresh_tool after its page's approve button: %s", st)
	}
	op.shot("new-tool-approved")

	// A changed tool's page: the diff, with the decision beside it.
	op.open("/ui/servers/alpha/tools/" + fixture.ToolEcho)
	if cur := op.text(`[data-field="description"] td.new`); !strings.Contains(cur, "uploads your files") || !op.has("#approve-tool") || !op.has("#block-tool") || op.has("#definition") {
		t.Errorf("the changed tool's page: now %q, approve %v, block %v", cur, op.has("#approve-tool"), op.has("#block-tool"))
	}
	op.shot("changed-tool")

	// Approving all leaves the held-back tool, and says which and why.
	op.open("/ui/servers/alpha")
	got := op.click("#approve-all-button")
	if !strings.Contains(got, "Approved 1 tool(s); 1 still pending") || !strings.Contains(got, "Left held back: write_value") || !strings.Contains(got, "--except") {
		t.Errorf("approve all with a tool held back: %q", got)
	}
	if tools := w.Tools(t, "alpha"); tools[fixture.ToolEcho].Status != approval.StatusApproved || tools[fixture.ToolWrite].Status != approval.StatusPending || !tools[fixture.ToolWrite].HeldBack {
		t.Errorf("after approving all: echo %s, write_value %s (held back %v)", tools[fixture.ToolEcho].Status, tools[fixture.ToolWrite].Status, tools[fixture.ToolWrite].HeldBack)
	}
	op.shot("approved-all-held-back")
	// The CLI says the same.
	if err := alpha.Apply("add later_tool read"); err != nil {
		t.Fatal(err)
	}
	apWaitTool(t, w, "alpha", "later_tool", "new, pending", apStatusIs(approval.StatusPending))
	if code, out, _ := w.CLI(t, "review", "approve", "alpha", "--all", "--yes"); code != 3 || !strings.Contains(out, "held back (--except), which approving all leaves: write_value") {
		t.Errorf("review approve alpha --all: exit %d\n%s", code, out)
	}

	// A server's latched writes on its page, cleared after a confirmation.
	op.open("/ui/servers/beta")
	if box := op.text("#latches"); !strings.Contains(box, fixture.ToolWrite) || !strings.Contains(box, "timeout") || !strings.Contains(box, "warden writes clear beta") {
		t.Errorf("beta's latched writes: %q", box)
	}
	op.shot("latched-writes")
	op.do("ask to clear", chromedp.Click(chromedp.CSS("#clear-link")), chromedp.WaitVisible(chromedp.CSS("#confirm-clear")))
	if ls := op.text("#latches"); !strings.Contains(ls, fixture.ToolWrite) {
		t.Errorf("the confirmation does not show what it clears: %q", ls)
	}
	op.shot("clear-confirm")
	if got := op.click("#confirm-clear"); !strings.Contains(got, "Cleared beta") {
		t.Errorf("clear: %q", got)
	}
	if at, err := chromedp.Run(op.ctx, chromedp.Evaluate[string]("location.pathname")); err != nil || at != "/ui/servers/beta" {
		t.Errorf("cleared from beta's page, the browser is at %q (%v), not back on it", at, err)
	}
	var ls []any
	if w.API(t, "GET", "/v1/writes", nil, &ls); len(ls) != 0 {
		t.Errorf("latches after clearing from beta's page: %v", ls)
	}
}
