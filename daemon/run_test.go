package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/instances"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// The tests here run the whole daemon in this process (wardentest), on a
// loopback port with a config file and state dir of their own.

// get sends a request to the daemon and answers its status and body.
func get(t *testing.T, w *wardentest.Warden, method, path, token, host, origin string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, w.URL(path), strings.NewReader(`{}`))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Every path of the one listener answers what it serves, behind the
// Host and Origin guard: the API only with the token, the MCP endpoints
// with each server's tools.
func TestRoutes(t *testing.T) {
	w := wardentest.Start(t, map[string]any{"fx": map[string]any{"url": fixture.NewServer(fixture.Options{}).Serve(t), "trusted": true}})
	w.WaitReady(t, "fx")
	for _, c := range []struct {
		name                      string
		method, path, token, host string
		origin                    string
		want                      int
		body                      string
	}{
		{"liveness", "GET", "/healthz", "", "", "", http.StatusOK, "ok"},
		{"metrics", "GET", "/metrics", "", "", "", http.StatusOK, "warden_upstream_state"},
		{"the API without the token", "GET", "/v1/status", "", "", "", http.StatusUnauthorized, "unauthorized"},
		{"the API with it", "GET", "/v1/status", w.Token, "", "", http.StatusOK, `"version": "test"`},
		{"the review page, logged out", "GET", "/ui/", "", "", "", http.StatusUnauthorized, "Log in"},
		{"a callback of no login", "GET", "/oauth/callback?state=x&code=y", "", "", "", http.StatusBadRequest, "did not start this login"},
		{"another host", "GET", "/healthz", "", "evil.example", "", http.StatusForbidden, "Host evil.example"},
		{"another origin", "POST", "/mcp", "", "", "http://evil.example", http.StatusForbidden, "Origin http://evil.example"},
		{"the token on another host", "GET", "/v1/status", w.Token, "rebound.example:80", "", http.StatusForbidden, "Host"},
	} {
		code, body := get(t, w, c.method, c.path, c.token, c.host, c.origin)
		if code != c.want || !strings.Contains(body, c.body) {
			t.Errorf("%s: %s %s answered %d %.200q, want %d with %q", c.name, c.method, c.path, code, body, c.want, c.body)
		}
	}
	for path, want := range map[string]string{"/mcp": "fx__" + fixture.ToolEcho, "/mcp/fx": fixture.ToolEcho} {
		cs := w.Connect(t, path, nil)
		if names := wardentest.ToolNames(t, cs); !contains(names, want) {
			t.Errorf("%s lists %v, want %s among them", path, names, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// status is GET /v1/status.
func status(t *testing.T, w *wardentest.Warden) api.Status {
	t.Helper()
	var st api.Status
	if code := w.API(t, "GET", "/v1/status", nil, &st); code != http.StatusOK {
		t.Fatalf("GET /v1/status: %d", code)
	}
	return st
}

// configEvent waits for the next config event whose result is want and
// answers its data.
func configEvent(t *testing.T, ev *wardentest.Events, want string) map[string]string {
	t.Helper()
	var data map[string]string
	ev.Await(t, 20*time.Second, "a config event "+want, func(e wardentest.Event) bool {
		data = nil
		return e.Type == "config" && json.Unmarshal(e.Data, &data) == nil && data["result"] == want
	})
	return data
}

// A changed config file is applied as it is saved: a server added starts;
// an entry that cannot be loaded keeps its server on the entry it had and
// says why; a file that is invalid, gone or empty is refused and the
// running config kept, with the reason in the status until a good file
// comes; a file that would stop every server is applied only once it has
// stayed so for a second.
func TestReload(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{}).Serve(t)
	w := wardentest.Start(t, map[string]any{"a": map[string]any{"url": fx, "trusted": true}})
	w.WaitReady(t, "a")
	ev := w.FollowEvents(t)

	w.Reload(t, func(s map[string]any) { s["b"] = map[string]any{"url": fx, "trusted": true} })
	configEvent(t, ev, "applied")
	w.WaitReady(t, "b")

	w.Reload(t, func(s map[string]any) { s["a"] = map[string]any{"url": 5} })
	if data := configEvent(t, ev, "applied"); !strings.Contains(data["error.a"], "url") {
		t.Fatalf("the applied config's event %v, want a's error", data)
	}
	if st := status(t, w); len(st.Servers) != 2 || w.Server(t, "a").State.State != "ready" || !strings.Contains(w.Server(t, "a").ConfigError, "still running the entry it had before") {
		t.Fatalf("after a broken entry: %+v, a: %+v", st.Servers, w.Server(t, "a"))
	}

	good, err := os.ReadFile(w.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		write func()
		want  string
	}{
		{"invalid", func() { wardentest.WriteFileAtomic(t, w.ConfigPath, []byte(`{"mcpServers": {`), 0o600) }, w.ConfigPath},
		{"gone", func() { os.Remove(w.ConfigPath) }, "the file is gone"},
		{"empty", func() { wardentest.WriteFileAtomic(t, w.ConfigPath, nil, 0o600) }, "the file is empty"},
	} {
		c.write()
		if data := configEvent(t, ev, "refused"); !strings.Contains(data["error"], c.want) {
			t.Errorf("%s: refused with %q, want it to say %q", c.name, data["error"], c.want)
		}
		if st := status(t, w); !strings.Contains(st.ReloadError, c.want) || len(st.Servers) != 2 {
			t.Errorf("%s: status %q with %d servers, want the reason and the running servers", c.name, st.ReloadError, len(st.Servers))
		}
	}
	wardentest.WriteFileAtomic(t, w.ConfigPath, good, 0o600)
	configEvent(t, ev, "applied")
	if st := status(t, w); st.ReloadError != "" {
		t.Fatalf("a good file after refused ones: reload error %q stays", st.ReloadError)
	}

	start := time.Now()
	wardentest.EditConfig(t, w.ConfigPath, func(s map[string]any) { clear(s) })
	configEvent(t, ev, "settling")
	configEvent(t, ev, "applied")
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("a config that stops every server was applied after %s, want at least a second", waited)
	}
	if st := status(t, w); len(st.Servers) != 0 {
		t.Fatalf("after every server was removed: %+v", st.Servers)
	}
}

// At a start, the stored session of a server disabled meanwhile is ended
// upstream (DELETE); that of a server gone from the config is forgotten
// and left to expire: nothing is known to end it with.
func TestStartPrunesStoredSessions(t *testing.T) {
	kept, gone := fixture.NewServer(fixture.Options{}), fixture.NewServer(fixture.Options{})
	dir := t.TempDir()
	cfg, stateDir := filepath.Join(dir, "config.json"), filepath.Join(dir, "state")
	wardentest.WriteConfig(t, cfg, map[string]any{
		"kept": map[string]any{"url": kept.Serve(t), "trusted": true},
		"gone": map[string]any{"url": gone.Serve(t), "trusted": true},
	})
	w := wardentest.StartWith(t, cfg, stateDir)
	w.WaitReady(t, "kept")
	w.WaitReady(t, "gone")
	w.Stop() // the sessions stay, to be resumed

	wardentest.EditConfig(t, cfg, func(s map[string]any) {
		s["kept"].(map[string]any)["disabled"] = true
		delete(s, "gone")
	})
	w = wardentest.StartWith(t, cfg, stateDir)
	wardentest.WaitFor(t, 10*time.Second, "the disabled server's session ended", func() bool { return kept.HTTP().Deletes() == 1 })
	if n := gone.HTTP().Deletes(); n != 0 {
		t.Fatalf("the session of a server gone from the config was ended %d times: nothing should know its config", n)
	}
	if !strings.Contains(w.Logs.String(), "record dropped") {
		t.Fatalf("the gone server's session record was not dropped:\n%s", w.Logs)
	}
	var sessions []map[string]any
	w.API(t, "GET", "/v1/sessions", nil, &sessions)
	if len(sessions) != 0 {
		t.Fatalf("stored sessions after the start: %+v", sessions)
	}
}

// A daemon that cannot start says why, before anything runs: a config
// that does not load, a store another Warden holds or one it cannot reach,
// an address in use.
func TestStartRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers": {"s": {"command": "x", "nosuch": 1}}, "unknownTop": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var ce *config.Error
	if err := daemon.Run(context.Background(), daemon.Options{ConfigPath: bad, StateDir: filepath.Join(dir, "s1")}); !errors.As(err, &ce) {
		t.Errorf("a config that does not load: %v, want a *config.Error", err)
	}

	w := wardentest.Start(t, map[string]any{})
	if err := daemon.Run(context.Background(), daemon.Options{ConfigPath: w.ConfigPath, StateDir: w.StateDir}); err == nil || !strings.Contains(err.Error(), "another warden is running") {
		t.Errorf("a second daemon on a state dir in use: %v", err)
	}

	// A database that cannot be reached (nothing listens on port 1): the
	// message names it, its password hidden, and what to do.
	unreachable := filepath.Join(dir, "store.json")
	err := os.WriteFile(unreachable, []byte(`{"store": "postgres://warden:pw-9f3e@127.0.0.1:1/warden", "storeKey": "0123456789abcdef0123"}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	err = daemon.Run(context.Background(), daemon.Options{ConfigPath: unreachable, StateDir: filepath.Join(dir, "s4"), Listen: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "postgres://warden:xxxxx@127.0.0.1:1/warden") || strings.Contains(err.Error(), "pw-9f3e") ||
		!strings.Contains(err.Error(), "check that the database is up") {
		t.Errorf("an unreachable store: %v", err)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	good := filepath.Join(dir, "good.json")
	wardentest.WriteConfig(t, good, map[string]any{})
	for _, c := range []struct {
		name string
		opts daemon.Options
		want string
	}{
		{"--listen", daemon.Options{ConfigPath: good, StateDir: filepath.Join(dir, "s2"), Listen: taken.Addr().String()}, "(--listen)"},
		{"the config's listen", daemon.Options{ConfigPath: writeListen(t, dir, taken.Addr().String()), StateDir: filepath.Join(dir, "s3")}, `field listen`},
	} {
		if err := daemon.Run(context.Background(), c.opts); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), taken.Addr().String()) {
			t.Errorf("%s in use: %v, want an error naming the address and %s", c.name, err, c.want)
		}
	}
}

// writeListen writes a config whose listen is addr.
func writeListen(t *testing.T, dir, addr string) string {
	t.Helper()
	path := filepath.Join(dir, "listen.json")
	if err := os.WriteFile(path, []byte(`{"listen": "`+addr+`", "mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A stdio server's stderr is kept in its log in the state dir, which the
// API's logs route reads.
func TestStderrLog(t *testing.T) {
	w := wardentest.Start(t, map[string]any{"noisy": map[string]any{"command": "sh", "args": []string{"-c", "echo 'a line on stderr' >&2; exit 1"}, "trusted": true}})
	path := filepath.Join(w.StateDir, "logs", "noisy.log")
	wardentest.WaitFor(t, 20*time.Second, "the line in "+path, func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), "a line on stderr")
	})
	if code, body := get(t, w, "GET", "/v1/servers/noisy/logs", w.Token, "", ""); code != http.StatusOK || !strings.Contains(body, "a line on stderr") {
		t.Fatalf("GET /v1/servers/noisy/logs: %d %q", code, body)
	}
}

// A running daemon records itself in the store (GET /v1/instances), under
// the name --instance gives, and removes the record on a clean stop: the
// next run lists only itself.
func TestInstanceRecord(t *testing.T) {
	named := func(o *daemon.Options) { o.Instance = "alpha" }
	w := wardentest.Start(t, map[string]any{})
	w.Stop()
	var runs []string
	for range 2 {
		w = wardentest.StartWith(t, w.ConfigPath, w.StateDir, named)
		var list []instances.Instance
		w.API(t, "GET", "/v1/instances", nil, &list)
		if len(list) != 1 || list[0].ID != "alpha" || list[0].Listen != w.Addr || list[0].Version != "test" || list[0].Gone {
			t.Fatalf("GET /v1/instances: %+v; want alpha at %s", list, w.Addr)
		}
		runs = append(runs, list[0].Run)
		w.Stop()
	}
	if runs[0] == runs[1] {
		t.Fatalf("two runs share the name %q", runs[0])
	}
}
