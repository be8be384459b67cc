package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// Rule 1: `warden serve` refuses a config file that is bad as a whole with
// exit status 1 and a message naming the file, the field and the fix (not
// a usage dump). A bad server entry only leaves that server out
// (TestBadEntriesAffectOnlyThemselves).
func TestServeRejectsBadConfig(t *testing.T) {
	bin := testenv.BuildBinary(t, "./cmd/warden")
	cases := []struct {
		name, config string
		want         []string // besides the file name
	}{
		{"syntax error", `{
  // a comment, as JSONC allows
  "mcpServers": {"a": {"command": "x",}},
`, []string{"invalid JSON", "fix the JSON syntax there"}},
		{"unknown top-level field", `{"listne": "127.0.0.1:1", "mcpServers": {}}`,
			[]string{"listne", "unknown field", `did you mean "listen"`}},
		{"bad listen", `{"listen": "localhost", "mcpServers": {}}`,
			[]string{"listen", "is not a host:port address", `"127.0.0.1:7373"`}},
		{"servers not an object", `{"mcpServers": ["a"]}`,
			[]string{"mcpServers", "is a list, not an object"}},
		{"servers twice", `{"mcpServers": {}, "servers": {}}`,
			[]string{`the file has both "mcpServers" and "servers"`, "keep one"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "warden.json")
			if err := os.WriteFile(cfg, []byte(tc.config), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("warden serve: %v, want exit status 1\nstderr:\n%s", err, stderr.String())
			}
			msg := stderr.String()
			for _, want := range append([]string{cfg}, tc.want...) {
				if !strings.Contains(msg, want) {
					t.Errorf("stderr lacks %q:\n%s", want, msg)
				}
			}
			for _, bad := range []string{"Usage:", "Flags:", "--help", "panic", "goroutine "} {
				if strings.Contains(msg, bad) {
					t.Errorf("stderr has %q: a bad config is not a usage error:\n%s", bad, msg)
				}
			}
			if n := strings.Count(strings.TrimSpace(msg), "\n"); n > 2 {
				t.Errorf("stderr is %d lines; want the one message:\n%s", n+1, msg)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout is not empty: %q", stdout.String())
			}
		})
	}
}

// Rule 1: with no config file, serve starts with no servers, /healthz
// answers and the log says how to add a server. It is told a free port with
// --listen (without it, it would take the default address, which the config
// tests check, and which another process may hold).
func TestServeWithoutConfigFile(t *testing.T) {
	bin := testenv.BuildBinary(t, "./cmd/warden")
	listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "no-such-dir", "config.json")
	state := filepath.Join(dir, "state")
	var stderr wardentest.LogBuffer
	cmd := exec.Command(bin, "serve", "--config", cfg, "--state-dir", state, "--listen", listen)
	cmd.Stderr = &stderr
	p := testenv.StartProcess(t, cmd)
	testenv.WaitHTTP(t, "http://"+listen+"/healthz", 20*time.Second)
	resp, err := http.Get("http://" + listen + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "ok" {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}
	if !strings.Contains(stderr.String(), "warden servers add") {
		t.Fatalf("the log does not say how to add a server:\n%s", stderr.String())
	}
	fi, err := os.Stat(filepath.Join(state, "api-token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("operator token: %v, mode %v; want a 0600 file", err, fi)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); err != nil {
		t.Fatalf("warden serve after SIGTERM: %v\n%s", err, stderr.String())
	}
}

// waitConfig waits for a "config" event with the given result and returns its data.
func waitConfig(t *testing.T, ev *wardentest.Events, result string, timeout time.Duration) map[string]any {
	t.Helper()
	var data map[string]any
	ev.Await(t, timeout, "a config event with result "+result, func(e wardentest.Event) bool {
		data = nil
		return e.Type == "config" && json.Unmarshal(e.Data, &data) == nil && data["result"] == result
	})
	return data
}

func writeServers(t *testing.T, w *wardentest.Warden, servers map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"listen": w.Addr, "mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	wardentest.WriteFileAtomic(t, w.ConfigPath, b, 0o600)
}

func readStats(t *testing.T, file string) fixture.Stats {
	t.Helper()
	s, ok := fixture.ReadStatsFile(file)
	if !ok {
		t.Fatalf("fixture stats %s: missing or not JSON", file)
	}
	return s
}

// Rule 2: hot reload on file change and on SIGHUP. Added servers start,
// removed ones stop (their process gone), changed ones restart, unchanged
// ones are not touched; a bad file keeps the running config and says why.
func TestHotReload(t *testing.T) {
	bin := testenv.BuildBinary(t, fixturePkg)
	dir := t.TempDir()
	stats := func(name string) string { return filepath.Join(dir, name+".json") }
	stdio := func(name string, extra ...string) map[string]any {
		return map[string]any{"command": bin, "args": append([]string{"-stats", stats(name)}, extra...), "trusted": true}
	}
	servers := map[string]any{
		"keep":   stdio("keep"),
		"drop":   stdio("drop"),
		"change": stdio("change", "-name", "v1"),
	}
	w := wardentest.Start(t, servers)
	for name := range servers {
		w.WaitReady(t, name)
	}
	ev := w.FollowEvents(t)
	keepConn, _ := w.D.Gateway().Upstream("keep")
	keepPID, dropPID, changePID := readPID(t, stats("keep")), readPID(t, stats("drop")), readPID(t, stats("change"))
	keepInits := readStats(t, stats("keep")).Initializes
	cs := w.Connect(t, "/mcp", nil)
	wardentest.CallText(t, cs, "keep__echo", map[string]any{"before": "reload"})

	// One edit: add, remove, change, keep.
	next := map[string]any{
		"keep":   stdio("keep"),
		"change": stdio("change", "-name", "v2"),
		"added":  stdio("added"),
	}
	writeServers(t, w, next)
	waitConfig(t, ev, "applied", 10*time.Second)
	w.WaitReady(t, "added")
	w.WaitReady(t, "change")
	if _, ok := w.D.Gateway().Upstream("drop"); ok {
		t.Fatal("removed server drop is still connected")
	}
	wardentest.WaitFor(t, 10*time.Second, "drop's process to exit", func() bool { return !testenv.Alive(dropPID) })
	if !testenv.Alive(readPID(t, stats("added"))) {
		t.Fatal("added server's process is not running")
	}
	wardentest.WaitFor(t, 10*time.Second, "change to run a new process", func() bool {
		return readStats(t, stats("change")).PID != changePID
	})
	wardentest.WaitFor(t, 10*time.Second, "change's old process to exit", func() bool { return !testenv.Alive(changePID) })
	assertUntouched := func(when string) {
		t.Helper()
		c, ok := w.D.Gateway().Upstream("keep")
		if !ok || c != keepConn {
			t.Fatalf("%s: the unchanged server keep got a new connection", when)
		}
		if st := c.Connection(); st.State != "ready" || st.Reconnects != 0 {
			t.Fatalf("%s: keep is %+v, want ready with no reconnects", when, st)
		}
		s := readStats(t, stats("keep"))
		if s.PID != keepPID || !testenv.Alive(keepPID) || s.Initializes != keepInits {
			t.Fatalf("%s: keep was restarted or reinitialized: pid %d→%d, initializes %d→%d", when, keepPID, s.PID, keepInits, s.Initializes)
		}
	}
	assertUntouched("after the edit")

	// Calls see the new set; the downstream session survived the reload.
	for _, tool := range []string{"keep__echo", "added__echo", "change__echo"} {
		wardentest.CallText(t, cs, tool, map[string]any{"after": "reload"})
	}
	if res, err := cs.CallTool(ctxT(t, 20*time.Second), &mcp.CallToolParams{Name: "drop__echo", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Fatal("a removed server's tool still answers")
	}
	var listed []struct{ Name string }
	w.API(t, "GET", "/v1/servers", nil, &listed)
	if names := fmt.Sprint(listed); strings.Contains(names, "drop") || !strings.Contains(names, "added") {
		t.Fatalf("/v1/servers after reload: %v", listed)
	}
	m := w.Metrics(t)
	if strings.Contains(m, `server="drop"`) {
		t.Fatalf("/metrics still reports the removed server drop:\n%s", grepLines(m, `server="drop"`))
	}
	for _, s := range []string{"keep", "change", "added"} {
		if want := `warden_upstream_state{server="` + s + `",state="ready"} 1`; !strings.Contains(m, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, grepLines(m, "warden_upstream_state"))
		}
	}

	// A bad entry affects only its server, which keeps the entry it had.
	badKeep := map[string]any{}
	for k, v := range next {
		badKeep[k] = v
	}
	badKeep["keep"] = map[string]any{"command": bin, "callTimeout": "soon"}
	writeServers(t, w, badKeep)
	applied := waitConfig(t, ev, "applied", 10*time.Second)
	if e, _ := applied["error.keep"].(string); !strings.Contains(e, "mcpServers.keep.callTimeout") || !strings.Contains(e, w.ConfigPath) {
		t.Fatalf("config event does not name the file and field of the bad entry: %v", applied)
	}
	var one struct {
		ConfigError string `json:"config_error"`
	}
	w.API(t, "GET", "/v1/servers/keep", nil, &one)
	if !strings.Contains(one.ConfigError, "mcpServers.keep.callTimeout") || !strings.Contains(one.ConfigError, "still running the entry it had before") {
		t.Fatalf("/v1/servers/keep config_error = %q", one.ConfigError)
	}
	assertUntouched("after a bad entry")

	// A file bad as a whole is refused: the running servers keep serving.
	bad := []byte(fmt.Sprintf(`{"listen": %q, "mcpServers": {"keep": {"command": %q}`, w.Addr, bin))
	wardentest.WriteFileAtomic(t, w.ConfigPath, bad, 0o600)
	refused := waitConfig(t, ev, "refused", 10*time.Second)
	if e, _ := refused["error"].(string); !strings.Contains(e, "invalid JSON") || !strings.Contains(e, w.ConfigPath) {
		t.Fatalf("refused event does not name the file and problem: %v", refused)
	}
	var st struct {
		ReloadError string `json:"reload_error"`
		Servers     []struct{ Name string }
	}
	w.API(t, "GET", "/v1/status", nil, &st)
	if !strings.Contains(st.ReloadError, "invalid JSON") {
		t.Fatalf("/v1/status reload_error = %q, want the problem named", st.ReloadError)
	}
	if len(st.Servers) != 3 {
		t.Fatalf("/v1/status after a refused reload lists %v, want the 3 running servers", st.Servers)
	}
	for _, tool := range []string{"keep__echo", "added__echo", "change__echo"} {
		wardentest.CallText(t, cs, tool, map[string]any{"during": "bad config"})
	}
	assertUntouched("after a refused reload")

	// Fixing the file clears the error.
	writeServers(t, w, next)
	waitConfig(t, ev, "applied", 10*time.Second)
	st.ReloadError = ""
	w.API(t, "GET", "/v1/status", nil, &st)
	if st.ReloadError != "" {
		t.Fatalf("reload_error %q remains after the file was fixed", st.ReloadError)
	}
	assertUntouched("after the fix")

	// SIGHUP reloads too. The test registers for SIGHUP itself first, so the
	// signal can never end the test process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	deadline := time.Now().Add(10 * time.Second)
	got := false
	for !got && time.Now().Before(deadline) {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if e, ok := ev.Next(time.Second); ok {
			var data map[string]any
			got = e.Type == "config" && json.Unmarshal(e.Data, &data) == nil && data["result"] == "applied"
		}
	}
	if !got {
		t.Fatal("SIGHUP did not reload the config")
	}
	assertUntouched("after SIGHUP")
}

const commentedConfig = `// Warden config, written by a person.
{
  "listen": %q, // where the daemon listens
  /* the servers */
  "mcpServers": {
    // the first one
    "first": {"command": %q, "trusted": true},
  },
}
`

// Rule 3: `warden servers add` and `remove` keep the file's comments, and
// the running daemon picks the change up by itself.
func TestServersAddRemoveThroughCLI(t *testing.T) {
	fixtureBin := testenv.BuildBinary(t, fixturePkg)
	wardenBin := testenv.BuildBinary(t, "./cmd/warden")
	w := wardentest.Start(t, map[string]any{"first": map[string]any{"command": fixtureBin, "trusted": true}})
	w.WaitReady(t, "first")
	ev := w.FollowEvents(t)
	wardentest.WriteFileAtomic(t, w.ConfigPath, []byte(fmt.Sprintf(commentedConfig, w.Addr, fixtureBin)), 0o600)
	waitConfig(t, ev, "applied", 10*time.Second)

	comments := []string{"// Warden config, written by a person.", "// where the daemon listens", "/* the servers */", "// the first one"}
	checkComments := func(when string) string {
		t.Helper()
		b, err := os.ReadFile(w.ConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range comments {
			if !bytes.Contains(b, []byte(c)) {
				t.Fatalf("%s: the config lost the comment %q:\n%s", when, c, b)
			}
		}
		return string(b)
	}
	cli := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, wardenBin, append([]string{"--config", w.ConfigPath, "--state-dir", w.StateDir}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("warden %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	servers := func() map[string]string {
		var list []struct {
			Name       string
			Connection struct{ State string }
		}
		w.API(t, "GET", "/v1/servers", nil, &list)
		m := map[string]string{}
		for _, s := range list {
			m[s.Name] = s.Connection.State
		}
		return m
	}

	cli("servers", "add", "second", "--trusted", "--", fixtureBin, "-name", "second")
	text := checkComments("after servers add")
	if !strings.Contains(text, `"second"`) {
		t.Fatalf("servers add did not write the server:\n%s", text)
	}
	wardentest.WaitFor(t, 20*time.Second, "the daemon to connect the added server", func() bool {
		return servers()["second"] == "ready"
	})
	cs := w.Connect(t, "/mcp", nil)
	wardentest.CallText(t, cs, "second__echo", map[string]any{"via": "cli"})

	cli("servers", "remove", "second")
	text = checkComments("after servers remove")
	if strings.Contains(text, `"second"`) {
		t.Fatalf("servers remove left the server in the file:\n%s", text)
	}
	wardentest.WaitFor(t, 20*time.Second, "the daemon to drop the removed server", func() bool {
		_, ok := servers()["second"]
		return !ok
	})
	if _, ok := w.D.Gateway().Upstream("second"); ok {
		t.Fatal("the removed server is still connected")
	}
	if got := servers()["first"]; got != "ready" {
		t.Fatalf("first is %q after the edits, want ready", got)
	}
}
