package e2e

// End-to-end tests of the operator's emergency stop (quarantining a trusted,
// working server through REST and the CLI) and of the
// notifications/tools/list_changed clients get when what they may see
// changes: a tool approved, a tool blocked, a server added by a reload.

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// qtAll is the fixture's fixed tools, sorted.
var qtAll = []string{fixture.ToolDelete, fixture.ToolEcho, fixture.ToolRead, fixture.ToolWrite}

// qtPrefixed is names with prefix before each.
func qtPrefixed(prefix string, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, prefix+n)
	}
	return out
}

// qtExpectQuarantined checks everything a quarantined server s shows:
// GET /v1/servers/s, no tools on /mcp/s nor under s__ on /mcp (other's stay),
// calls refused with SERVER_QUARANTINED naming `warden servers approve s` on
// both surfaces and through `warden call`, and nothing reaching the upstream.
func qtExpectQuarantined(t *testing.T, w *wardentest.Warden, f *fixture.Fixture, when string) {
	t.Helper()
	if s := w.Server(t, "s"); !s.Quarantined || !s.Trusted {
		t.Fatalf("%s: GET /v1/servers/s = quarantined %v, trusted %v; want a quarantined trusted server", when, s.Quarantined, s.Trusted)
	}
	one := w.Connect(t, "/mcp/s", nil)
	defer one.Close()
	agg := w.Connect(t, "/mcp", nil)
	defer agg.Close()
	if got := wardentest.SortedToolNames(t, one); len(got) != 0 {
		t.Fatalf("%s: /mcp/s lists %v, want nothing", when, got)
	}
	if got := wardentest.SortedToolNames(t, agg); !slices.Equal(got, qtPrefixed("other__", qtAll)) {
		t.Fatalf("%s: /mcp lists %v, want only other's tools", when, got)
	}
	calls := f.Calls(fixture.ToolEcho) + f.Calls(fixture.ToolRead)
	apExpectRefusal(t, one, fixture.ToolEcho, "SERVER_QUARANTINED", "warden servers approve s")
	apExpectRefusal(t, agg, "s__"+fixture.ToolRead, "SERVER_QUARANTINED", "warden servers approve s")
	dsExpectCLIRefusal(t, w, "s", fixture.ToolEcho, "SERVER_QUARANTINED", "warden servers approve s")
	if n := f.Calls(fixture.ToolEcho) + f.Calls(fixture.ToolRead); n != calls {
		t.Fatalf("%s: a quarantined server's tool reached the upstream", when)
	}
}

// qtEmergencyStop quarantines the trusted, working server s with quarantine,
// then checks it stays quarantined across a reload that keeps it trusted, a
// reload that reconnects it, and a restart, until `warden servers approve s`.
func qtEmergencyStop(t *testing.T, quarantine func(w *wardentest.Warden)) {
	f := fixture.NewServer(fixture.Options{})
	other := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"s":     map[string]any{"url": f.Serve(t), "trusted": true},
		"other": map[string]any{"url": other.Serve(t), "trusted": true},
	})
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	w.WaitReady(t, "s")
	w.WaitReady(t, "other")
	apWaitTool(t, w, "s", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))
	apWaitTool(t, w, "other", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))

	oneNotes, aggNotes := newAPNotes(), newAPNotes()
	one := w.Connect(t, "/mcp/s", oneNotes.options())
	agg := w.Connect(t, "/mcp", aggNotes.options())
	if got := wardentest.SortedToolNames(t, one); !slices.Equal(got, qtAll) {
		t.Fatalf("/mcp/s lists %v before the quarantine", got)
	}
	wardentest.CallText(t, one, fixture.ToolEcho, map[string]any{"before": "quarantine"})
	wardentest.CallText(t, agg, "s__"+fixture.ToolEcho, map[string]any{"before": "quarantine"})

	oneNotes.quiet()
	aggNotes.quiet()
	quarantine(w)
	// The sessions are told, and then list what is left.
	qtListAfterNotes(t, one, oneNotes, "the quarantine on /mcp/s", func(names []string) bool { return len(names) == 0 })
	qtListAfterNotes(t, agg, aggNotes, "the quarantine on /mcp", func(names []string) bool {
		return slices.Equal(names, qtPrefixed("other__", qtAll))
	})
	apExpectRefusal(t, one, fixture.ToolEcho, "SERVER_QUARANTINED", "warden servers approve s")
	qtExpectQuarantined(t, w, f, "after the quarantine")
	// The tools' own approvals are kept, only withheld.
	if by := apByStatus(w.Tools(t, "s")); !slices.Equal(by[approval.StatusApproved], qtAll) {
		t.Fatalf("after the quarantine the tools are %v, want all still approved", by)
	}

	// A reload that keeps "trusted": true does not lift it ...
	w.Reload(t, nil)
	qtExpectQuarantined(t, w, f, "after a reload")
	// ... nor one that reconnects the server (a fresh listing).
	first, _ := w.D.Gateway().Upstream("s")
	before := w.D.Gateway().Listed("s").Seq
	w.Reload(t, func(servers map[string]any) {
		servers["s"].(map[string]any)["headers"] = map[string]string{"X-Warden-Test": "reconnect"}
	})
	wardentest.WaitFor(t, 20*time.Second, "s on a new connection", func() bool {
		c, ok := w.D.Gateway().Upstream("s")
		return ok && c != first && c.Connection().State == "ready" && w.D.Gateway().Listed("s").Seq > before
	})
	qtExpectQuarantined(t, w, f, "after a reconnecting reload")

	// Nor does a restart on the same state dir.
	one.Close()
	agg.Close()
	w.Stop()
	w = wardentest.StartWith(t, w.ConfigPath, w.StateDir)
	w.WaitReady(t, "s")
	w.WaitReady(t, "other")
	qtExpectQuarantined(t, w, f, "after a restart")

	// `warden servers approve s` lifts it; clients are told.
	oneNotes, aggNotes = newAPNotes(), newAPNotes()
	one = w.Connect(t, "/mcp/s", oneNotes.options())
	agg = w.Connect(t, "/mcp", aggNotes.options())
	oneNotes.quiet()
	aggNotes.quiet()
	code, stdout, stderr := w.CLI(t, "servers", "approve", "s", "--yes")
	if code != 0 {
		t.Fatalf("warden servers approve s: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if s := w.Server(t, "s"); s.Quarantined {
		t.Fatal("s is still quarantined after warden servers approve s")
	}
	qtListAfterNotes(t, one, oneNotes, "the approval on /mcp/s", func(names []string) bool { return slices.Equal(names, qtAll) })
	qtListAfterNotes(t, agg, aggNotes, "the approval on /mcp", func(names []string) bool {
		return len(names) == 8 && slices.Contains(names, "s__"+fixture.ToolEcho)
	})
	calls := f.Calls(fixture.ToolEcho)
	if got := wardentest.CallText(t, one, fixture.ToolEcho, map[string]any{"after": "approve"}); !strings.Contains(got, "approve") {
		t.Fatalf("echo after the approval = %q", got)
	}
	wardentest.CallText(t, agg, "s__"+fixture.ToolEcho, map[string]any{"after": "approve"})
	if code, out, errOut := w.CLI(t, "call", "s", fixture.ToolEcho, "--args", `{"via":"cli"}`); code != 0 || !strings.Contains(out, "cli") {
		t.Fatalf("warden call s echo after the approval: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := f.Calls(fixture.ToolEcho) - calls; n != 3 {
		t.Fatalf("%d echo calls reached the upstream after the approval, want 3", n)
	}
}

// POST /v1/servers/{s}/quarantine on a trusted server whose tools work.
func TestQuarantineViaREST(t *testing.T) {
	qtEmergencyStop(t, func(w *wardentest.Warden) {
		var s api.Server
		if code := w.API(t, "POST", "/v1/servers/s/quarantine", nil, &s); code != http.StatusOK {
			t.Fatalf("POST /v1/servers/s/quarantine: status %d", code)
		}
		if s.Name != "s" || !s.Quarantined {
			t.Fatalf("POST /v1/servers/s/quarantine answered %+v, want s quarantined", s)
		}
	})
}

// `warden servers quarantine NAME` against the running daemon.
func TestQuarantineViaCLI(t *testing.T) {
	qtEmergencyStop(t, func(w *wardentest.Warden) {
		code, stdout, stderr := w.CLI(t, "servers", "quarantine", "s")
		if code != 0 || !strings.Contains(stdout, "warden servers approve s") {
			t.Fatalf("warden servers quarantine s: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	})
}

// qtListAfterNotes does what a client does on notifications/tools/list_changed:
// after each one it lists the tools again, until the list satisfies cond. It
// fails when no further notification comes within 15s: a client that was not
// told would not see the change.
func qtListAfterNotes(t *testing.T, cs *mcp.ClientSession, notes *apNotes, what string, cond func([]string) bool) {
	t.Helper()
	var names []string
	for {
		notes.wait(t, what+" (last listed: "+strings.Join(names, ", ")+")")
		if names = wardentest.SortedToolNames(t, cs); cond(names) {
			return
		}
	}
}

// qtSetup starts a Warden with the trusted fixture server s, baselined,
// and clients on /mcp/s and /mcp that record list_changed.
func qtSetup(t *testing.T) (f *fixture.Fixture, w *wardentest.Warden, one, agg *mcp.ClientSession, oneNotes, aggNotes *apNotes) {
	t.Helper()
	f = fixture.NewServer(fixture.Options{})
	w = wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")
	apWaitTool(t, w, "s", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))
	oneNotes, aggNotes = newAPNotes(), newAPNotes()
	one = w.Connect(t, "/mcp/s", oneNotes.options())
	agg = w.Connect(t, "/mcp", aggNotes.options())
	if got := wardentest.SortedToolNames(t, one); !slices.Equal(got, qtAll) {
		t.Fatalf("/mcp/s lists %v", got)
	}
	return f, w, one, agg, oneNotes, aggNotes
}

// Approving a pending tool (`warden review approve`) tells clients, which
// then list it and can call it.
func TestListChangedOnToolApproval(t *testing.T) {
	f, w, one, agg, oneNotes, aggNotes := qtSetup(t)
	f.AddTool(&mcp.Tool{Name: "fresh", Description: "Appeared after the baseline.", Annotations: fixture.ClassAnnotations("read")})
	apWaitTool(t, w, "s", "fresh", "pending", apStatusIs(approval.StatusPending))
	apExpectRefusal(t, one, "fresh", "TOOL_PENDING")

	oneNotes.quiet()
	aggNotes.quiet()
	if got := wardentest.SortedToolNames(t, one); slices.Contains(got, "fresh") {
		t.Fatalf("pending fresh is listed: %v", got)
	}
	code, stdout, stderr := w.CLI(t, "review", "approve", "s", "fresh", "--yes")
	if code != 0 || !strings.Contains(stdout, "approved 1") {
		t.Fatalf("warden review approve s fresh: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	qtListAfterNotes(t, one, oneNotes, "approving fresh on /mcp/s", func(names []string) bool { return slices.Contains(names, "fresh") })
	qtListAfterNotes(t, agg, aggNotes, "approving fresh on /mcp", func(names []string) bool { return slices.Contains(names, "s__fresh") })
	if got := wardentest.CallText(t, agg, "s__fresh", map[string]any{"approved": "yes"}); !strings.Contains(got, "approved") {
		t.Fatalf("s__fresh = %q", got)
	}
}

// `warden review block` tells clients; the blocked tool leaves the lists and
// is refused with TOOL_BLOCKED on the MCP surfaces and through `warden call`.
func TestListChangedOnReviewBlock(t *testing.T) {
	f, w, one, agg, oneNotes, aggNotes := qtSetup(t)
	wardentest.CallText(t, one, fixture.ToolEcho, map[string]any{"before": "block"})
	oneNotes.quiet()
	aggNotes.quiet()
	code, stdout, stderr := w.CLI(t, "review", "block", "s", fixture.ToolEcho)
	if code != 0 || !strings.Contains(stdout, "blocked 1") {
		t.Fatalf("warden review block s echo: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	qtListAfterNotes(t, one, oneNotes, "blocking echo on /mcp/s", func(names []string) bool {
		return slices.Equal(names, []string{fixture.ToolDelete, fixture.ToolRead, fixture.ToolWrite})
	})
	qtListAfterNotes(t, agg, aggNotes, "blocking echo on /mcp", func(names []string) bool {
		return slices.Equal(names, qtPrefixed("s__", []string{fixture.ToolDelete, fixture.ToolRead, fixture.ToolWrite}))
	})
	if x := w.Tools(t, "s")[fixture.ToolEcho]; x.Status != approval.StatusBlocked {
		t.Fatalf("echo is %s after the block", x.Status)
	}
	calls := f.Calls(fixture.ToolEcho)
	apExpectRefusal(t, one, fixture.ToolEcho, "TOOL_BLOCKED", "warden review approve s echo")
	apExpectRefusal(t, agg, "s__"+fixture.ToolEcho, "TOOL_BLOCKED", "warden review approve s echo")
	dsExpectCLIRefusal(t, w, "s", fixture.ToolEcho, "TOOL_BLOCKED", "warden review approve s echo")
	if f.Calls(fixture.ToolEcho) != calls {
		t.Fatal("a blocked tool's call reached the upstream")
	}
	// The other tools still work.
	wardentest.CallText(t, one, fixture.ToolRead, map[string]any{"key": "k"})
}

// A hot reload that adds a trusted server tells /mcp clients, which then
// list and call its tools.
func TestListChangedOnHotReloadAddingServer(t *testing.T) {
	_, w, _, agg, _, aggNotes := qtSetup(t)
	added := fixture.NewServer(fixture.Options{})
	url := added.Serve(t)
	aggNotes.quiet()
	if got := wardentest.SortedToolNames(t, agg); !slices.Equal(got, qtPrefixed("s__", qtAll)) {
		t.Fatalf("/mcp lists %v before the reload", got)
	}
	w.Reload(t, func(servers map[string]any) {
		servers["added"] = map[string]any{"url": url, "trusted": true}
	})
	w.WaitReady(t, "added")
	qtListAfterNotes(t, agg, aggNotes, "added's 4 tools on /mcp", func(names []string) bool {
		return len(dsWithPrefix(names, "added__")) == 4
	})
	if got := wardentest.CallText(t, agg, "added__echo", map[string]any{"new": "server"}); !strings.Contains(got, "server") {
		t.Fatalf("added__echo = %q", got)
	}
}
