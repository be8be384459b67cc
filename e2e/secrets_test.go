package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// Secrets (${env:} expansions, header values, tokens in URLs, stdio env
// values and expanded args) must never show anywhere Warden writes or
// answers: the operator API, /metrics, /v1/events, the CLI, the daemon's
// log, the MCP refusals, and every file in the state dir. These helpers
// gather all of those as raw bytes, so a secret hidden in one JSON field
// but present in another still fails.

// secMarker is a unique secret value for one test run.
func secMarker(what string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return "sEcReT" + what + hex.EncodeToString(b)
}

// secSync makes a reload that changes nothing and waits until its "config"
// event has been streamed: every event published before it has been
// streamed too (one subscriber's events are delivered in order).
func secSync(t *testing.T, w *wardentest.Warden, ev *wardentest.Events) {
	t.Helper()
	n := strings.Count(ev.Raw(), `"type":"config"`)
	wardentest.EditConfig(t, w.ConfigPath, nil)
	wardentest.WaitFor(t, 20*time.Second, "the reload's config event on /v1/events", func() bool {
		return strings.Count(ev.Raw(), `"type":"config"`) > n
	})
}

// secGet reads a route's whole raw answer (with the operator token).
func secGet(t *testing.T, w *wardentest.Warden, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, w.URL(path), nil)
	req.Header.Set("Authorization", "Bearer "+w.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", path, resp.Status, b)
	}
	return b
}

// secLiveSurfaces reads every read route of the API (for servers and each
// of them), /metrics, and the CLI's read commands, as text and with --json.
func secLiveSurfaces(t *testing.T, w *wardentest.Warden, servers ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	routes := []string{"/v1/status", "/v1/servers", "/v1/sessions", "/v1/activity", "/v1/writes", "/metrics", "/healthz"}
	for _, s := range servers {
		routes = append(routes, "/v1/servers/"+s, "/v1/servers/"+s+"/tools", "/v1/activity?server="+s)
	}
	for _, r := range routes {
		out["GET "+r] = secGet(t, w, r)
	}
	cmds := [][]string{{"status"}, {"servers", "list"}, {"review"}, {"writes", "list"}, {"sessions"}, {"activity"}}
	for _, s := range servers {
		cmds = append(cmds, []string{"tools", s}, []string{"review", s})
	}
	for _, c := range cmds {
		for _, asJSON := range []bool{true, false} {
			args := append([]string{}, c...)
			if asJSON {
				args = append(args, "--json")
			}
			code, stdout, stderr := w.CLI(t, args...)
			name := "warden " + strings.Join(args, " ")
			if code != 0 && code != 3 {
				t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", name, code, stdout, stderr)
			}
			if asJSON && !(strings.HasPrefix(stdout, "{") || strings.HasPrefix(stdout, "[")) {
				t.Fatalf("%s printed no JSON: %q", name, stdout)
			}
			out[name+" (stdout)"] = []byte(stdout)
			out[name+" (stderr)"] = []byte(stderr)
		}
	}
	return out
}

// secStateFiles reads every regular file under the state dir.
func secStateFiles(t *testing.T, stateDir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(stateDir, path)
		out["state file "+rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// secCheck fails for every surface that holds any of the secrets.
func secCheck(t *testing.T, surfaces map[string][]byte, secrets map[string]string) {
	t.Helper()
	names := make([]string, 0, len(surfaces))
	for n := range surfaces {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for what, secret := range secrets {
			if i := bytes.Index(surfaces[n], []byte(secret)); i >= 0 {
				b := surfaces[n]
				lo, hi := max(0, i-200), min(len(b), i+len(secret)+200)
				t.Errorf("the %s shows in %s: ...%q...", what, n, b[lo:hi])
			}
		}
	}
}

func secJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A secret expanded into a server's URL never shows: not in any API answer
// (whole bodies), events, the log, the CLI, the state dir, or a refusal an
// agent reads, even when every connection attempt fails with Go's errors
// that quote the URL. With userinfo in the URL, Go's errors quote it in its
// redacted form (user:***@host), which must not let the rest of it through.
func TestURLSecretNeverShown(t *testing.T) {
	for _, tc := range []struct{ name, url string }{
		{"query", "http://127.0.0.1:PORT/mcp?key=${env:UPSTREAM_KEY}"},
		{"userinfo and query", "http://user:${env:UPSTREAM_PASS}@127.0.0.1:PORT/mcp?key=${env:UPSTREAM_KEY}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := map[string]string{"URL query secret": secMarker("urlkey"), "URL password": secMarker("urlpass")}
			t.Setenv("UPSTREAM_KEY", secrets["URL query secret"])
			t.Setenv("UPSTREAM_PASS", secrets["URL password"])
			down := strings.Replace(tc.url, "PORT", itoa(testenv.FreePort(t)), 1)
			w := wardentest.Start(t, map[string]any{"down": map[string]any{"url": down, "trusted": true, "callTimeout": "1s"}})
			ev := w.FollowEvents(t)

			var st struct{ Connection struct{ Error string } }
			wardentest.WaitFor(t, 20*time.Second, "a failed connection attempt", func() bool {
				w.API(t, "GET", "/v1/servers/down", nil, &st)
				return st.Connection.Error != ""
			})
			if !strings.Contains(st.Connection.Error, "127.0.0.1") {
				t.Fatalf("the error should still say where: %q", st.Connection.Error)
			}
			surfaces := map[string][]byte{}
			cs := w.Connect(t, "/mcp/down", nil)
			res := wardentest.CallResult(t, cs, "echo", map[string]any{})
			if !res.IsError {
				t.Fatalf("a call to the unreachable server succeeded: %q", wardentest.ResultText(res))
			}
			surfaces["refusal"] = secJSON(t, res)
			wardentest.WaitFor(t, 20*time.Second, "the refusal in the activity log", func() bool {
				return len(wlActivityOf(t, w, "")) >= 1
			})
			for n, b := range secLiveSurfaces(t, w, "down") {
				surfaces[n] = b
			}
			secSync(t, w, ev)
			ev.Stop()
			surfaces["/v1/events"] = []byte(ev.Raw())
			if !strings.Contains(ev.Raw(), `"error":`) {
				t.Fatalf("no event with the connection error streamed (is the test reading the events?): %s", ev.Raw())
			}
			w.Stop()
			surfaces["daemon log"] = []byte(w.Logs.String())
			files := secStateFiles(t, w.StateDir)
			if _, ok := files["state file warden.db"]; !ok {
				t.Fatalf("no warden.db in the state dir; files: %v", slices.Sorted(maps.Keys(files)))
			}
			maps.Copy(surfaces, files)
			secCheck(t, surfaces, secrets)
		})
	}
}

// Header values (expanded from the environment or written literally), a
// token in a URL, and a stdio server's env values and expanded args never
// show anywhere, after calls (activity entries, a stored session) and after
// upstream 401s that make errors to report.
func TestSecretsNeverShown(t *testing.T) {
	secrets := map[string]string{
		"env-expanded bearer token":        secMarker("bearer"),
		"literal header value":             secMarker("apikey"),
		"env-expanded URL token":           secMarker("urlq"),
		"env-expanded stdio env value":     secMarker("envx"),
		"literal stdio env value":          secMarker("envlit"),
		"env-expanded stdio arg":           secMarker("arg"),
		"literal bearer token of a reload": secMarker("lateauth"),
		"env-expanded header of a reload":  secMarker("lateenv"),
	}
	t.Setenv("SEC_BEARER", secrets["env-expanded bearer token"])
	t.Setenv("SEC_URLQ", secrets["env-expanded URL token"])
	t.Setenv("SEC_STDIO_ENV", secrets["env-expanded stdio env value"])
	t.Setenv("SEC_STDIO_ARG", secrets["env-expanded stdio arg"])
	t.Setenv("SEC_LATE", secrets["env-expanded header of a reload"])

	// hdr: streamable HTTP with an expanded bearer token, a literal header
	// and a token in the URL query; its first request is answered 401.
	hf := fixture.NewServer(fixture.Options{})
	hf.HTTP().RequireAuthorization("Bearer " + secrets["env-expanded bearer token"])
	hf.HTTP().UnauthorizedNext(1)
	hdrURL := hf.Serve(t) + "?token=${env:SEC_URLQ}"
	// proc: stdio with secrets in env (expanded and literal) and in args.
	stats := filepath.Join(t.TempDir(), "stats.json")
	servers := map[string]any{
		"hdr": map[string]any{"url": hdrURL, "trusted": true, "headers": map[string]string{
			"Authorization": "Bearer ${env:SEC_BEARER}",
			"X-Api-Key":     secrets["literal header value"],
		}},
		"proc": map[string]any{"command": testenv.BuildBinary(t, fixturePkg), "trusted": true,
			"args": []string{"-stats", stats, "-apply", "set argkey ${env:SEC_STDIO_ARG}"},
			"env":  map[string]string{"FIXTURE_TOKEN": "${env:SEC_STDIO_ENV}", "FIXTURE_LITERAL": secrets["literal stdio env value"]}},
		// loud prints its environment, secrets included, to its stderr log.
		"loud": map[string]any{"command": "sh", "trusted": true,
			"args": []string{"-c", `env >&2; printf 'unfinished %s' "$LOUD_TOKEN" >&2; exec "$0"`, testenv.BuildBinary(t, fixturePkg)},
			"env":  map[string]string{"LOUD_TOKEN": "${env:SEC_STDIO_ENV}", "LOUD_LITERAL": secrets["literal stdio env value"]}},
	}
	w := wardentest.Start(t, servers)
	w.WaitReady(t, "hdr")
	w.WaitReady(t, "proc")
	w.WaitReady(t, "loud")
	loudLog := filepath.Join(w.StateDir, "logs", "loud.log")
	wardentest.WaitFor(t, 10*time.Second, "loud's environment in its log, masked", func() bool {
		b, _ := os.ReadFile(loudLog)
		return bytes.Contains(b, []byte("LOUD_TOKEN=***\n")) && bytes.Contains(b, []byte("LOUD_LITERAL=***\n"))
	})
	ev := w.FollowEvents(t)

	// The secrets did reach the upstreams (so the test looks at live values).
	if got := hf.HTTP().LastAuthorization(); got != "Bearer "+secrets["env-expanded bearer token"] {
		t.Fatalf("hdr got Authorization %q, want the expanded token", got)
	}
	if hf.HTTP().Requests()[0].Status != http.StatusUnauthorized {
		t.Fatalf("hdr's first request was not answered 401: %+v", hf.HTTP().Requests()[0])
	}
	st, ok := fixture.ReadStatsFile(stats)
	if !ok || st.Values["argkey"] != secrets["env-expanded stdio arg"] {
		t.Fatalf("proc did not get the expanded arg: %+v", st.Values)
	}
	environ, err := os.ReadFile("/proc/" + itoa(st.PID) + "/environ")
	if err != nil && runtime.GOOS == "linux" {
		t.Fatal(err)
	}
	for _, kv := range []string{"FIXTURE_TOKEN=" + secrets["env-expanded stdio env value"], "FIXTURE_LITERAL=" + secrets["literal stdio env value"]} {
		if err == nil && !bytes.Contains(environ, []byte(kv+"\x00")) {
			t.Fatalf("proc's environment lacks %s", kv)
		}
	}

	// late: added by a reload, with a literal bearer token and an expanded
	// header; its first two requests (server/discover, then the fallback
	// initialize) are answered 401 too, while events stream.
	lf := fixture.NewServer(fixture.Options{})
	lf.HTTP().RequireAuthorization("Bearer " + secrets["literal bearer token of a reload"])
	lf.HTTP().UnauthorizedNext(2)
	lateURL := lf.Serve(t)
	w.Reload(t, func(s map[string]any) {
		s["late"] = map[string]any{"url": lateURL, "trusted": true, "headers": map[string]string{
			"Authorization": "Bearer " + secrets["literal bearer token of a reload"],
			"X-Late":        "${env:SEC_LATE}",
		}}
	})
	w.WaitReady(t, "late")
	if lf.HTTP().Requests()[0].Status != http.StatusUnauthorized {
		t.Fatalf("late's first request was not answered 401: %+v", lf.HTTP().Requests()[0])
	}

	// Calls, so the activity log and the store have entries.
	surfaces := map[string][]byte{}
	cs := w.Connect(t, "/mcp", nil)
	surfaces["tools/list"] = secJSON(t, wardentest.ToolNames(t, cs))
	for _, s := range []string{"hdr", "proc", "late"} {
		wardentest.CallText(t, cs, s+"__echo", map[string]any{"n": 1})
		res := wardentest.CallResult(t, cs, s+"__write_value", map[string]any{"key": "k", "value": s})
		if res.IsError {
			t.Fatalf("%s__write_value: %q", s, wardentest.ResultText(res))
		}
	}
	// A call the upstream refuses with 401: an error the agent and the
	// activity log see.
	mark := len(hf.HTTP().Requests())
	hf.HTTP().UnauthorizedNext(1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	refused, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hdr__echo", Arguments: map[string]any{"n": 2}})
	cancel()
	switch {
	case err != nil:
		surfaces["refused call error"] = []byte(err.Error())
	case refused.IsError:
		surfaces["refused call result"] = secJSON(t, refused)
	default:
		t.Fatalf("hdr__echo answered 401 upstream succeeded: %q", wardentest.ResultText(refused))
	}
	if !slices.ContainsFunc(hf.HTTP().Requests()[mark:], func(r fixture.Request) bool {
		return slices.Contains(r.RPCMethods, "tools/call") && r.Status == http.StatusUnauthorized
	}) {
		t.Fatalf("the upstream did not answer the call 401: %+v", hf.HTTP().Requests()[mark:])
	}
	wardentest.WaitFor(t, 20*time.Second, "the calls in the activity log", func() bool {
		return len(wlActivityOf(t, w, "")) >= 7
	})

	for n, b := range secLiveSurfaces(t, w, "hdr", "proc", "late") {
		surfaces[n] = b
	}
	for _, s := range []string{"hdr", "late"} {
		if !bytes.Contains(surfaces["GET /v1/sessions"], []byte(`"`+s+`"`)) {
			t.Fatalf("/v1/sessions has no session of %s: %s", s, surfaces["GET /v1/sessions"])
		}
	}
	secSync(t, w, ev)
	ev.Stop()
	surfaces["/v1/events"] = []byte(ev.Raw())
	if !strings.Contains(ev.Raw(), `"server":"late"`) {
		t.Fatalf("no event of server late streamed: %s", ev.Raw())
	}
	w.Stop()
	logs := w.Logs.String()
	surfaces["daemon log"] = []byte(logs)
	if !strings.Contains(logs, "late") || !strings.Contains(logs, "401") && !strings.Contains(logs, "Unauthorized") {
		t.Fatalf("the log does not report the 401s (is the test reading it?):\n%s", logs)
	}
	files := secStateFiles(t, w.StateDir)
	for _, f := range []string{"warden.db", "logs/proc.log"} {
		if _, ok := files["state file "+f]; !ok {
			t.Fatalf("no %s in the state dir; files: %v", f, slices.Sorted(maps.Keys(files)))
		}
	}
	inStore := false
	for _, sid := range append(hf.HTTP().SessionIDs(), lf.HTTP().SessionIDs()...) {
		inStore = inStore || bytes.Contains(files["state file warden.db"], []byte(sid))
	}
	if !inStore {
		t.Fatal("warden.db holds no upstream session id (is the test reading the store?)")
	}
	for n, b := range files {
		surfaces[n] = b
	}
	secCheck(t, surfaces, secrets)
}
