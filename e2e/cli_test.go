package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/fixture"
	"github.com/wardenmcp/warden/internal/wardentest"
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
	if code, out, _ := apCLI(t, w, "activity", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("activity --json with no calls: exit %d, %q", code, out)
	}
	if code, _, stderr := apCLI(t, w, "writes", "clear", "nosuch"); code != 1 || !strings.Contains(stderr, `no server "nosuch"`) {
		t.Fatalf("writes clear nosuch: exit %d, %s", code, stderr)
	}

	code, out, stderr := apCLI(t, w, "call", "s", "echo", "--args", `{"x":1}`)
	if code != 0 || !strings.Contains(out, `{"x":1}`) {
		t.Fatalf("warden call s echo: exit %d, stdout %q, stderr %q", code, out, stderr)
	}

	code, _, stderr = apCLI(t, w, "call", "held", "echo")
	if code != 1 || !strings.Contains(stderr, "SERVER_QUARANTINED") || !strings.Contains(stderr, "warden servers approve held") {
		t.Fatalf("call on a quarantined server: exit %d, stderr %q", code, stderr)
	}
	if n := held.Calls("echo"); n != 0 {
		t.Fatalf("the quarantined server was called %d times", n)
	}

	// A write that times out latches the server; the next one is refused
	// without reaching the upstream.
	code, _, stderr = apCLI(t, w, "call", "s", "write_value", "--args", `{"key":"k","value":"v","sleep_ms":5000}`)
	if code != 1 || !strings.Contains(stderr, "warden writes clear s") {
		t.Fatalf("timed-out write: exit %d, stderr %q", code, stderr)
	}
	dispatched := up.WriteDispatches()
	code, _, stderr = apCLI(t, w, "call", "s", "write_value", "--args", `{"key":"k","value":"v2"}`)
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

	code, out, _ = apCLI(t, w, "servers", "list", "--json")
	var servers []struct {
		Name string `json:"name"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &servers) != nil || len(servers) != 2 {
		t.Fatalf("servers list --json: exit %d, %s", code, out)
	}
	code, out, _ = apCLI(t, w, "servers", "list")
	if code != 0 || !strings.Contains(out, "held") || !strings.Contains(out, "s ") {
		t.Fatalf("servers list: exit %d, %s", code, out)
	}
	code, out, _ = apCLI(t, w, "tools", "s")
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
	if code, _, stderr := apCLI(t, w, "call", "s", "nosuch"); code != 1 || !strings.Contains(stderr, "warden tools s") {
		t.Fatalf("warden call s nosuch: exit %d, %s", code, stderr)
	}
}
