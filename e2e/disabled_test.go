package e2e

// End-to-end tests of `"disabled": true` on a configured server: it is not
// connected (an HTTP upstream's session is DELETEd and its record dropped, a
// stdio child is stopped), its tools leave every surface, calls to it are
// refused with UPSTREAM_UNAVAILABLE, and enabling it again brings it back.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// dsSessionServers lists the servers GET /v1/sessions holds a record of.
func dsSessionServers(t *testing.T, w *wardentest.Warden) []string {
	t.Helper()
	var list []struct {
		Server string `json:"server"`
	}
	if code := w.API(t, "GET", "/v1/sessions", nil, &list); code != http.StatusOK {
		t.Fatalf("GET /v1/sessions: status %d", code)
	}
	var out []string
	for _, s := range list {
		out = append(out, s.Server)
	}
	return out
}

// dsWithPrefix returns the names that start with prefix.
func dsWithPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// dsSetDisabled is an apReload edit that sets server's "disabled".
func dsSetDisabled(server string, disabled bool) func(map[string]any) {
	return func(servers map[string]any) { servers[server].(map[string]any)["disabled"] = disabled }
}

// dsExpectCLIRefusal runs `warden call SERVER TOOL` and wants exit 1 with a
// refusal of code on stderr.
func dsExpectCLIRefusal(t *testing.T, w *wardentest.Warden, server, tool, code string, mention ...string) {
	t.Helper()
	exit, stdout, stderr := w.CLI(t, "call", server, tool, "--args", `{"key":"k"}`)
	if exit != 1 || !strings.Contains(stderr, "refused ("+code+")") {
		t.Fatalf("warden call %s %s: exit %d, want 1 with a %s refusal\nstdout:\n%s\nstderr:\n%s", server, tool, exit, code, stdout, stderr)
	}
	for _, m := range mention {
		if !strings.Contains(stderr, m) {
			t.Fatalf("warden call %s %s: the refusal does not mention %q:\n%s", server, tool, m, stderr)
		}
	}
}

// dsExpectNoEndpoint checks that /mcp/{server} of a disabled server answers
// 404, saying it is disabled and how to enable it.
func dsExpectNoEndpoint(t *testing.T, w *wardentest.Warden, server string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	req, _ := http.NewRequest("POST", w.URL("/mcp/"+server), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /mcp/%s: %v", server, err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer struct {
		Error struct{ Message string } `json:"error"`
	}
	_ = json.Unmarshal(raw, &answer) // a JSON-RPC error, as the request was JSON-RPC
	msg := answer.Error.Message
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(msg, "disabled") || !strings.Contains(msg, `remove "disabled": true`) {
		t.Fatalf("POST /mcp/%s of a disabled server: %s %q; want 404 and a JSON-RPC error saying it is disabled and how to enable it", server, resp.Status, raw)
	}
}

// A trusted HTTP server disabled by a reload: its upstream session is
// DELETEd and its record dropped, its tools leave /mcp (with list_changed),
// /mcp/up has nothing, calls are refused; enabling it connects it again.
// Disabled while Warden is down, its stored session is DELETEd at the next
// start and nothing else is sent to it.
func TestDisabledHTTPServer(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	other := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"up":    map[string]any{"url": f.Serve(t), "trusted": true},
		"other": map[string]any{"url": other.Serve(t), "trusted": true},
	})
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	w.WaitReady(t, "up")
	w.WaitReady(t, "other")
	apWaitTool(t, w, "up", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))

	notes := newAPNotes()
	agg := w.Connect(t, "/mcp", notes.options())
	wardentest.WaitFor(t, 10*time.Second, "/mcp to list up's 4 tools", func() bool {
		return len(dsWithPrefix(wardentest.SortedToolNames(t, agg), "up__")) == 4
	})
	wardentest.CallText(t, agg, "up__echo", map[string]any{"before": "disable"})
	if got := dsSessionServers(t, w); !slices.Contains(got, "up") {
		t.Fatalf("/v1/sessions = %v before disabling, want a record of up", got)
	}
	if n := f.HTTP().Deletes(); n != 0 {
		t.Fatalf("%d DELETEs before disabling", n)
	}
	sid := f.HTTP().SessionIDs()[0]

	// Disable it.
	notes.quiet()
	w.Reload(t, dsSetDisabled("up", true))
	wardentest.WaitFor(t, 20*time.Second, "up's session to be DELETEd", func() bool { return f.HTTP().Deletes() == 1 })
	if got := f.HTTP().DeletedSessions(); !slices.Equal(got, []string{sid}) {
		t.Fatalf("DELETE named sessions %v, want [%s]", got, sid)
	}
	if _, ok := w.D.Gateway().Upstream("up"); ok {
		t.Fatal("the disabled server is still connected")
	}
	if got := dsSessionServers(t, w); slices.Contains(got, "up") || !slices.Contains(got, "other") {
		t.Fatalf("/v1/sessions = %v after disabling up, want other's record only", got)
	}
	if s := w.Server(t, "up"); !s.Disabled {
		t.Fatalf("GET /v1/servers/up = %+v, want disabled", s)
	}
	qtListAfterNotes(t, agg, notes, "disabling up", func(names []string) bool { return len(dsWithPrefix(names, "up__")) == 0 })
	if got := dsWithPrefix(wardentest.SortedToolNames(t, agg), "other__"); len(got) != 4 {
		t.Fatalf("/mcp lists %v of other after disabling up, want its 4 tools", got)
	}
	calls := f.Calls(fixture.ToolEcho)
	dsExpectCLIRefusal(t, w, "up", fixture.ToolEcho, "UPSTREAM_UNAVAILABLE")
	dsExpectNoEndpoint(t, w, "up")
	if f.Calls(fixture.ToolEcho) != calls {
		t.Fatal("a call to the disabled server reached the upstream")
	}
	// Nothing is sent to a disabled server (the DELETE was the last request).
	mark := len(f.HTTP().Requests())
	wardentest.CallText(t, agg, "other__echo", map[string]any{"while": "disabled"})
	if reqs := f.HTTP().Requests()[mark:]; len(reqs) != 0 {
		t.Fatalf("the disabled upstream got %d requests, first %+v", len(reqs), reqs[0])
	}

	// Enable it again: a fresh session, tools back, calls answered.
	notes.quiet()
	w.Reload(t, dsSetDisabled("up", false))
	w.WaitReady(t, "up")
	qtListAfterNotes(t, agg, notes, "enabling up", func(names []string) bool { return len(dsWithPrefix(names, "up__")) == 4 })
	if got := wardentest.CallText(t, agg, "up__echo", map[string]any{"after": "enable"}); !strings.Contains(got, "enable") {
		t.Fatalf("up__echo after enabling = %q", got)
	}
	one := w.Connect(t, "/mcp/up", nil)
	if got := wardentest.SortedToolNames(t, one); len(got) != 4 {
		t.Fatalf("/mcp/up after enabling lists %v, want 4 tools", got)
	}
	if n := f.Initializes(); n != 2 {
		t.Fatalf("initializes = %d after enabling, want 2 (a fresh session; the old one was deleted)", n)
	}
	ids := f.HTTP().SessionIDs()
	sid2 := ids[len(ids)-1]
	if sid2 == sid {
		t.Fatal("enabling reused the deleted session")
	}
	if got := dsSessionServers(t, w); !slices.Contains(got, "up") {
		t.Fatalf("/v1/sessions = %v after enabling, want a record of up", got)
	}

	// Disabled while Warden is down: the next start DELETEs the stored
	// session, drops the record and does not connect.
	one.Close()
	agg.Close()
	w.Stop()
	if n := f.HTTP().Deletes(); n != 1 {
		t.Fatalf("a clean stop sent a DELETE (%d in all), want the session kept", n)
	}
	wardentest.EditConfig(t, w.ConfigPath, dsSetDisabled("up", true))
	mark = len(f.HTTP().Requests())
	w = wardentest.StartWith(t, w.ConfigPath, w.StateDir)
	w.WaitReady(t, "other")
	wardentest.WaitFor(t, 20*time.Second, "the stored session to be DELETEd at start", func() bool { return f.HTTP().Deletes() == 2 })
	if got := f.HTTP().DeletedSessions(); len(got) != 2 || got[1] != sid2 {
		t.Fatalf("DELETEs named %v, want the second to be %s", got, sid2)
	}
	if got := dsSessionServers(t, w); slices.Contains(got, "up") {
		t.Fatalf("/v1/sessions = %v after a start with up disabled", got)
	}
	agg = w.Connect(t, "/mcp", nil)
	if got := wardentest.SortedToolNames(t, agg); len(dsWithPrefix(got, "up__")) != 0 || len(dsWithPrefix(got, "other__")) != 4 {
		t.Fatalf("/mcp lists %v with up disabled from the start", got)
	}
	dsExpectCLIRefusal(t, w, "up", fixture.ToolEcho, "UPSTREAM_UNAVAILABLE")
	for _, r := range f.HTTP().Requests()[mark:] {
		if r.Method != "DELETE" {
			t.Fatalf("a server disabled from the start got %s %v", r.Method, r.RPCMethods)
		}
	}
	if _, ok := w.D.Gateway().Upstream("up"); ok {
		t.Fatal("a server disabled from the start is connected")
	}
}

// A call on /mcp to a tool of a server disabled by a reload is a policy
// refusal (isError, UPSTREAM_UNAVAILABLE), also once the lists have caught
// up, as it is through `warden call`; not a protocol error.
func TestDisabledCallRefusedOnMCP(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	other := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"up":    map[string]any{"url": f.Serve(t), "trusted": true},
		"other": map[string]any{"url": other.Serve(t), "trusted": true},
	})
	w.WaitReady(t, "up")
	w.WaitReady(t, "other")
	apWaitTool(t, w, "up", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))
	agg := w.Connect(t, "/mcp", nil)
	wardentest.WaitFor(t, 10*time.Second, "/mcp to list up's tools", func() bool {
		return slices.Contains(wardentest.SortedToolNames(t, agg), "up__echo")
	})
	w.Reload(t, dsSetDisabled("up", true))
	wardentest.WaitFor(t, 10*time.Second, "up's tools to leave /mcp", func() bool {
		return len(dsWithPrefix(wardentest.SortedToolNames(t, agg), "up__")) == 0
	})
	calls := f.Calls(fixture.ToolEcho)
	// `warden call`, which runs "the same policy as agents", refuses it.
	dsExpectCLIRefusal(t, w, "up", fixture.ToolEcho, "UPSTREAM_UNAVAILABLE", "disabled")
	res, err := agg.CallTool(ctxT(t, 30*time.Second), &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"key": "k"}})
	if err != nil {
		t.Fatalf("call up__echo on /mcp after disabling up: protocol error %v; want the policy refusal (isError, UPSTREAM_UNAVAILABLE, saying the server is disabled) that warden call gives", err)
	}
	if !res.IsError || client.Refusal(res) != "UPSTREAM_UNAVAILABLE" || !strings.Contains(wardentest.ResultText(res), "disabled") {
		t.Fatalf("call up__echo on /mcp after disabling up: isError=%v code=%q text=%q; want an UPSTREAM_UNAVAILABLE refusal saying the server is disabled",
			res.IsError, client.Refusal(res), wardentest.ResultText(res))
	}
	if f.Calls(fixture.ToolEcho) != calls {
		t.Fatal("a call to the disabled server reached the upstream")
	}
}

// A stdio server disabled by a reload: its child process exits, its tools
// leave the surfaces, calls are refused; enabling it runs a new child.
// Disabled in the config at start, it is never run.
func TestDisabledStdioServer(t *testing.T) {
	bin := testenv.BuildBinary(t, fixturePkg)
	stats := filepath.Join(t.TempDir(), "local.json")
	other := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"local": map[string]any{"command": bin, "args": []string{"-stats", stats}, "trusted": true},
		"other": map[string]any{"url": other.Serve(t), "trusted": true},
	})
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	w.WaitReady(t, "local")
	w.WaitReady(t, "other")
	apWaitTool(t, w, "local", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))
	pid := readPID(t, stats)
	if !testenv.Alive(pid) {
		t.Fatalf("local's process %d is not running", pid)
	}

	notes := newAPNotes()
	agg := w.Connect(t, "/mcp", notes.options())
	wardentest.WaitFor(t, 10*time.Second, "/mcp to list local's 4 tools", func() bool {
		return len(dsWithPrefix(wardentest.SortedToolNames(t, agg), "local__")) == 4
	})
	wardentest.CallText(t, agg, "local__echo", map[string]any{"before": "disable"})

	notes.quiet()
	w.Reload(t, dsSetDisabled("local", true))
	wardentest.WaitFor(t, 10*time.Second, "local's process to exit", func() bool { return !testenv.Alive(pid) })
	if _, ok := w.D.Gateway().Upstream("local"); ok {
		t.Fatal("the disabled server is still connected")
	}
	if s := w.Server(t, "local"); !s.Disabled {
		t.Fatalf("GET /v1/servers/local = %+v, want disabled", s)
	}
	qtListAfterNotes(t, agg, notes, "disabling local", func(names []string) bool { return len(dsWithPrefix(names, "local__")) == 0 })
	if got := dsWithPrefix(wardentest.SortedToolNames(t, agg), "other__"); len(got) != 4 {
		t.Fatalf("/mcp lists %v of other after disabling local", got)
	}
	if got := dsSessionServers(t, w); slices.Contains(got, "local") {
		t.Fatalf("/v1/sessions = %v holds a record of the disabled stdio server", got)
	}
	dsExpectCLIRefusal(t, w, "local", fixture.ToolEcho, "UPSTREAM_UNAVAILABLE")
	dsExpectNoEndpoint(t, w, "local")
	if readPID(t, stats) != pid {
		t.Fatal("a new process of the disabled server was started")
	}

	// Enable it again: a new child, tools back.
	notes.quiet()
	w.Reload(t, dsSetDisabled("local", false))
	w.WaitReady(t, "local")
	var pid2 int
	wardentest.WaitFor(t, 10*time.Second, "a new process of local", func() bool {
		pid2 = readPID(t, stats)
		return pid2 != pid && testenv.Alive(pid2)
	})
	qtListAfterNotes(t, agg, notes, "enabling local", func(names []string) bool { return len(dsWithPrefix(names, "local__")) == 4 })
	if got := wardentest.CallText(t, agg, "local__echo", map[string]any{"after": "enable"}); !strings.Contains(got, "enable") {
		t.Fatalf("local__echo after enabling = %q", got)
	}

	// Disabled in the config at start: never run.
	agg.Close()
	w.Stop()
	wardentest.WaitFor(t, 10*time.Second, "local's process to exit with Warden", func() bool { return !testenv.Alive(pid2) })
	if err := os.Remove(stats); err != nil {
		t.Fatal(err)
	}
	wardentest.EditConfig(t, w.ConfigPath, dsSetDisabled("local", true))
	w = wardentest.StartWith(t, w.ConfigPath, w.StateDir)
	w.WaitReady(t, "other")
	agg = w.Connect(t, "/mcp", nil)
	if got := wardentest.SortedToolNames(t, agg); len(dsWithPrefix(got, "local__")) != 0 || len(dsWithPrefix(got, "other__")) != 4 {
		t.Fatalf("/mcp lists %v with local disabled from the start", got)
	}
	dsExpectCLIRefusal(t, w, "local", fixture.ToolEcho, "UPSTREAM_UNAVAILABLE")
	if _, ok := w.D.Gateway().Upstream("local"); ok {
		t.Fatal("a server disabled from the start is connected")
	}
	if _, err := os.Stat(stats); !os.IsNotExist(err) {
		t.Fatalf("a server disabled from the start was run (its stats file: %v)", err)
	}
}
