package e2e

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// `warden call` against a running daemon goes through the same policy as an
// agent's call (quarantine, the write latch) and is logged as surface "cli";
// `servers list` and `tools` read the running daemon.
func TestCLICallGoesThroughPolicy(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	held := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"s":    map[string]any{"url": up.Serve(t), "trusted": true, "callTimeout": "300ms"},
		"held": map[string]any{"url": held.Serve(t)}, // not trusted: quarantined
	})
	w.WaitReady(t, "s")
	w.WaitReady(t, "held")

	// Nothing yet: an empty list, not null; a typo in a server's name is
	// not taken for a server without latches.
	if code, out, _ := w.CLI(t, "activity", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("activity --json with no calls: exit %d, %q", code, out)
	}
	if code, _, stderr := w.CLI(t, "writes", "clear", "nosuch"); code != 1 || !strings.Contains(stderr, `no server "nosuch"`) {
		t.Fatalf("writes clear nosuch: exit %d, %s", code, stderr)
	}

	code, out, stderr := w.CLI(t, "call", "s", "echo", "--args", `{"x":1}`)
	if code != 0 || !strings.Contains(out, `{"x":1}`) {
		t.Fatalf("warden call s echo: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	code, _, stderr = w.CLI(t, "call", "held", "echo")
	if code != 1 || !strings.Contains(stderr, "SERVER_QUARANTINED") || !strings.Contains(stderr, "warden servers approve held") {
		t.Fatalf("call on a quarantined server: exit %d, stderr %q", code, stderr)
	}
	if n := held.Calls("echo"); n != 0 {
		t.Fatalf("the quarantined server was called %d times", n)
	}

	// A write that times out latches the server; the next one is refused
	// without reaching the upstream.
	code, _, stderr = w.CLI(t, "call", "s", "write_value", "--args", `{"key":"k","value":"v","sleep_ms":5000}`)
	if code != 1 || !strings.Contains(stderr, "warden writes clear s") {
		t.Fatalf("timed-out write: exit %d, stderr %q", code, stderr)
	}
	dispatched := up.WriteDispatches()
	code, _, stderr = w.CLI(t, "call", "s", "write_value", "--args", `{"key":"k","value":"v2"}`)
	if code != 1 || !strings.Contains(stderr, "WRITES_LATCHED") || !strings.Contains(stderr, "warden writes clear s") {
		t.Fatalf("write on a latched server: exit %d, stderr %q", code, stderr)
	}
	if n := up.WriteDispatches(); n != dispatched {
		t.Fatalf("a refused write reached the upstream (%d dispatches, want %d)", n, dispatched)
	}

	var entries []wlActivity
	wardentest.WaitFor(t, 10*time.Second, "the four CLI calls in the activity log", func() bool {
		entries = wlActivityOf(t, w, "")
		return len(entries) >= 4
	})
	var got []string
	for _, e := range entries { // newest first
		got = append(got, strings.Join([]string{e.Surface, e.Server, e.Tool, e.Outcome, e.Code}, " "))
	}
	want := []string{
		"cli s write_value refused WRITES_LATCHED",
		"cli s write_value unknown ",
		"cli held echo refused SERVER_QUARANTINED",
		"cli s echo ok ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("activity:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	code, out, _ = w.CLI(t, "servers", "list", "--json")
	var servers []struct {
		Name string `json:"name"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &servers) != nil || len(servers) != 2 {
		t.Fatalf("servers list --json: exit %d, %s", code, out)
	}
	code, out, _ = w.CLI(t, "servers", "list")
	if code != 0 || !strings.Contains(out, "held") || !strings.Contains(out, "s ") {
		t.Fatalf("servers list: exit %d, %s", code, out)
	}
	code, out, _ = w.CLI(t, "tools", "s")
	if code != 0 || !strings.Contains(out, "echo") || !strings.Contains(out, "write_value") {
		t.Fatalf("tools s: exit %d, %s", code, out)
	}
}

// A call the operator API cannot make sense of is bad input, answered 400
// (or 404 for a tool the server does not have) with the reason, not an
// upstream error: nothing was sent.
func TestAPICallBadInput(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": up.Serve(t), "trusted": true,
		"tools": map[string]any{fixture.ToolWrite: map[string]any{"hidden": true}}}})
	w.WaitReady(t, "s")
	for _, c := range []struct {
		body        string
		status      int
		code, names string
		help        bool // names `warden tools s`
	}{
		{`{}`, 400, "bad_request", `"tool"`, true},
		{`null`, 400, "bad_request", `"tool"`, true},
		{`{"tool": "echo", "arguments": [1]}`, 400, "bad_request", `"arguments" must be a JSON object`, false},
		{`{"tool": "nosuch"}`, 404, "unknown_tool", `"nosuch"`, true},
		{`{"tool": "` + fixture.ToolWrite + `", "arguments": {"key": "k", "value": "v"}}`, 404, "unknown_tool", fixture.ToolWrite, true},
	} {
		req, _ := http.NewRequest("POST", w.URL("/v1/servers/s/call"), strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+w.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e api.Error
		err = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if err != nil || resp.StatusCode != c.status || e.Error.Code != c.code ||
			!strings.Contains(e.Error.Message, c.names) || c.help && !strings.Contains(e.Error.Message, "warden tools s") {
			t.Errorf("POST /v1/servers/s/call %s: %d %+v (%v), want %d %s naming %s", c.body, resp.StatusCode, e, err, c.status, c.code, c.names)
		}
	}
	if n := up.WriteDispatches(); n != 0 {
		t.Fatalf("the hidden write reached the upstream %d times", n)
	}
	// The CLI says the same.
	if code, _, stderr := w.CLI(t, "call", "s", "nosuch"); code != 1 || !strings.Contains(stderr, "warden tools s") {
		t.Fatalf("warden call s nosuch: exit %d, %s", code, stderr)
	}
}

// Issue 12, item 1: a tool held back with --except stays held when the
// server is admitted by the command the hint names; that command shows what
// it will approve, with each tool's class, and asks.
func TestCLIAdmitKeepsException(t *testing.T) {
	w := cliStartQuarantined(t, "everything", fixture.NewServer(fixture.Options{}), fixture.ToolEcho)

	code, out, stderr := w.CLI(t, "review", "approve", "everything", "--all", "--except", fixture.ToolEcho, "--yes")
	if code != 3 {
		t.Fatalf("review approve --except: exit %d, want 3\n%s\n%s", code, out, stderr)
	}
	_, hint, ok := strings.Cut(out, "admit it with: ")
	hint, _, _ = strings.Cut(hint, " (")
	if !ok || !strings.Contains(out, fixture.ToolEcho+" stays held") {
		t.Fatalf("no hint that keeps the exception:\n%s", out)
	}
	args := strings.Fields(hint)
	if len(args) < 3 || args[0] != "warden" {
		t.Fatalf("hint %q is not a warden command", hint)
	}

	// Without an answer (a script that forgot --yes): nothing changes.
	code, out, stderr = w.CLI(t, args[1:]...)
	if code != 1 || !strings.Contains(stderr, "[y/N]") || !strings.Contains(stderr, "--yes") {
		t.Fatalf("%s without an answer: exit %d\n%s\n%s", hint, code, out, stderr)
	}
	for _, want := range []string{"about to admit everything and approve 0 tool(s)",
		"left held, as held back earlier: " + fixture.ToolEcho} {
		if !strings.Contains(out, want) {
			t.Fatalf("%s: the plan lacks %q:\n%s", hint, want, out)
		}
	}
	if !w.Server(t, "everything").Quarantined {
		t.Fatal("an unconfirmed admission admitted the server")
	}

	code, out, stderr = w.CLI(t, append(args[1:], "--yes")...)
	if code != 3 || !strings.Contains(out, "admitted everything") || !strings.Contains(stderr, fixture.ToolEcho) {
		t.Fatalf("%s --yes: exit %d, want 3\n%s\n%s", hint, code, out, stderr)
	}
	tools := w.Tools(t, "everything")
	if w.Server(t, "everything").Quarantined || tools[fixture.ToolEcho].Status != approval.StatusPending || !tools[fixture.ToolEcho].HeldBack {
		t.Fatalf("after the admission: echo %+v", tools[fixture.ToolEcho])
	}
	if got := apByStatus(tools)[approval.StatusApproved]; len(got) != len(tools)-1 {
		t.Fatalf("approved %v of %d tools", got, len(tools))
	}
	// Naming it approves it.
	if code, out, stderr := w.CLI(t, "review", "approve", "everything", fixture.ToolEcho, "--yes"); code != 0 {
		t.Fatalf("approving echo by name: exit %d\n%s\n%s", code, out, stderr)
	}
	if st := w.Tools(t, "everything")[fixture.ToolEcho]; st.Status != approval.StatusApproved || st.HeldBack {
		t.Fatalf("echo after approval by name: %+v", st)
	}
}

// A new server's admission shows each tool with its class before asking.
func TestCLIAdmitShowsClasses(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	f.AddTool(&mcp.Tool{Name: "bare", Description: "No annotations."})
	w := cliStartQuarantined(t, "memory", f, "bare")
	code, out, stderr := w.CLI(t, "servers", "approve", "memory")
	if code != 1 || !w.Server(t, "memory").Quarantined {
		t.Fatalf("servers approve without an answer: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"about to admit memory and approve 5 tool(s)", "read_value", "read",
		"destructive (no annotations: MCP default)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("plan lacks %q:\n%s", want, out)
		}
	}
}

// Exit status 3 for read commands that show something held; the binary
// reports its build; completion works in a bash without the
// bash-completion package, with names from the running daemon.
func TestCLIHeldExitVersionCompletion(t *testing.T) {
	w := cliStartQuarantined(t, "held", fixture.NewServer(fixture.Options{}), fixture.ToolEcho)
	for _, args := range [][]string{{"tools", "held"}, {"tools", "held", "--json"}, {"review"}, {"review", "held", "--json"}} {
		if code, out, stderr := w.CLI(t, args...); code != 3 {
			t.Errorf("warden %s: exit %d, want 3\n%s\n%s", strings.Join(args, " "), code, out, stderr)
		}
	}
	if code, _, stderr := w.CLI(t, "activity", "--server", "nosuch"); code != 1 || !strings.Contains(stderr, `no server "nosuch"`) {
		t.Errorf("activity --server nosuch: exit %d, %s", code, stderr)
	}

	// The version and commit the binary's build info holds (as "go version
	// -m" reads them), or "dev" when it holds neither.
	bin := testenv.BuildBinary(t, "./cmd/warden")
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	want := "dev"
	if info.Main.Version != "" && info.Main.Version != "(devel)" {
		want = info.Main.Version
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			want = s.Value
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || !strings.HasPrefix(string(out), "warden ") || !strings.Contains(string(out), want) {
			t.Errorf("warden %s: %v, %q, want it to name %s", args[0], err, out, want)
		}
	}
	path := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(path, "warden")); err != nil {
		t.Fatal(err)
	}

	// bash --norc loads no bash-completion package. compopt works only
	// while bash itself runs a completion, so it is stubbed out here.
	script := `source <(warden completion bash) || exit 1
compopt() { :; }
complete_line() {
    COMP_LINE=$1; COMP_POINT=${#COMP_LINE}
    read -ra COMP_WORDS <<<"$COMP_LINE"
    [[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    __start_warden warden "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    echo "${COMPREPLY[*]}"
}
complete_line "warden tools "
complete_line "warden review approve held e"
complete_line "warden vers"
`
	cmd := exec.Command("bash", "--norc", "--noprofile", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+path+":"+os.Getenv("PATH"),
		"WARDEN_CONFIG="+w.ConfigPath, "WARDEN_STATE_DIR="+w.StateDir)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, stderr.String())
	}
	if got, want := string(out), "held\necho\nversion\n"; got != want || stderr.Len() > 0 {
		t.Fatalf("completions:\n%s\nwant:\n%s\nstderr: %s", got, want, stderr.String())
	}
}

// cliStartQuarantined starts Warden with f as the untrusted (quarantined)
// server name, and waits until f's tool is recorded pending.
func cliStartQuarantined(t *testing.T, name string, f *fixture.Fixture, tool string) *wardentest.Warden {
	t.Helper()
	w := wardentest.Start(t, map[string]any{name: map[string]any{"url": f.Serve(t)}})
	w.WaitReady(t, name)
	apWaitTool(t, w, name, tool, "pending", apStatusIs(approval.StatusPending))
	return w
}
