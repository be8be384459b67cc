package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

const upstreamToken = "tok-SECRET-4d1f2a"

// sessionSetup starts an upstream fixture and a Warden that reaches it with
// a bearer token from the environment.
func sessionSetup(t *testing.T) (*fixture.Fixture, *wardentest.Warden) {
	t.Setenv("UPSTREAM_TOKEN", upstreamToken)
	f := fixture.NewServer(fixture.Options{})
	url := f.Serve(t)
	w := wardentest.Start(t, map[string]any{"up": map[string]any{
		"url": url, "trusted": true, "headers": map[string]string{"Authorization": "Bearer ${env:UPSTREAM_TOKEN}"},
	}})
	w.WaitReady(t, "up")
	return f, w
}

func restart(t *testing.T, w *wardentest.Warden) *wardentest.Warden {
	t.Helper()
	w.Stop()
	w2 := wardentest.StartWith(t, w.ConfigPath, w.StateDir)
	return w2
}

func echoThrough(t *testing.T, w *wardentest.Warden) {
	t.Helper()
	cs := w.Connect(t, "/mcp/up", nil)
	if got := wardentest.CallText(t, cs, "echo", map[string]any{"n": 1}); !strings.Contains(got, `"n"`) {
		t.Fatalf("echo = %q", got)
	}
}

// postSessions lists the session ids of POSTs the upstream saw after index i.
func postSessions(f *fixture.Fixture, from int) []string {
	var ids []string
	for _, r := range f.HTTP().Requests()[from:] {
		if r.Method == "POST" {
			ids = append(ids, r.SessionID)
		}
	}
	return ids
}

func TestSessionResumedAfterRestart(t *testing.T) {
	f, w := sessionSetup(t)
	echoThrough(t, w)
	if n := f.Initializes(); n != 1 {
		t.Fatalf("initializes before restart = %d, want 1", n)
	}
	sid := f.HTTP().SessionIDs()[0]
	mark := len(f.HTTP().Requests())
	w = restart(t, w)
	w.WaitReady(t, "up")
	echoThrough(t, w)
	if n := f.Initializes(); n != 1 {
		t.Fatalf("initializes after restart = %d, want 1 (the session must be resumed)", n)
	}
	for _, id := range postSessions(f, mark) {
		if id != sid {
			t.Fatalf("after restart a request used session %q, want the resumed %q", id, sid)
		}
	}
	var list []struct{ Server, Mode string }
	w.API(t, "GET", "/v1/sessions", nil, &list)
	if len(list) != 1 || list[0].Server != "up" || list[0].Mode != "resumed" {
		t.Fatalf("/v1/sessions = %+v, want up resumed", list)
	}
	if f.HTTP().Deletes() != 0 {
		t.Fatalf("a clean stop must keep the session, but %d DELETEs were sent", f.HTTP().Deletes())
	}
	// The store holds the session, never the header value.
	w.Stop()
	db, err := os.ReadFile(filepath.Join(w.StateDir, "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(db, []byte(upstreamToken)) {
		t.Fatal("the store file contains the upstream token")
	}
	if !bytes.Contains(db, []byte(sid)) {
		t.Fatal("the store file does not hold the session id (test is not looking at the right file)")
	}
}

func TestSessionForgottenUpstreamReinitializes(t *testing.T) {
	f, w := sessionSetup(t)
	echoThrough(t, w)
	old := f.HTTP().SessionIDs()[0]
	w.Stop()
	mark := len(f.HTTP().Requests())
	f.HTTP().ForgetSessions()
	w = restart(t, w)
	w.WaitReady(t, "up")
	echoThrough(t, w)
	freshInitializeChecks(t, w, f.HTTP().Requests()[mark:], old, http.StatusNotFound, upstreamToken)
	if n := f.Initializes(); n != 2 {
		t.Fatalf("initializes = %d, want exactly 2 (one fresh initialize after the expired resume)", n)
	}
}

func TestSessionUnauthorizedOnceReinitializesWithLiveCredentials(t *testing.T) {
	f, w := sessionSetup(t)
	echoThrough(t, w)
	old := f.HTTP().SessionIDs()[0]
	w.Stop()
	mark := len(f.HTTP().Requests())
	f.HTTP().UnauthorizedNext(1)
	w = restart(t, w)
	w.WaitReady(t, "up")
	echoThrough(t, w)
	freshInitializeChecks(t, w, f.HTTP().Requests()[mark:], old, http.StatusUnauthorized, upstreamToken)
	if n := f.Initializes(); n != 2 {
		t.Fatalf("initializes = %d, want 2", n)
	}
	if got := f.HTTP().LastAuthorization(); got != "Bearer "+upstreamToken {
		t.Fatalf("fresh initialize sent Authorization %q, want the live config's", got)
	}
}

// freshInitializeChecks checks the requests an upstream saw after a restart
// whose resumed session was refused with status: the first request was on
// the resumed session and got that status, then exactly one initialize
// went out, on no session (a fresh one, not the dead one again) and with the
// live config's token; the fallback stayed invisible (nothing failed).
func freshInitializeChecks(t *testing.T, w *wardentest.Warden, reqs []fixture.Request, old string, status int, token string) {
	t.Helper()
	if len(reqs) == 0 || reqs[0].SessionID != old || reqs[0].Status != status {
		t.Fatalf("the first request after the restart was %+v, want one on the resumed session %q answered %d", reqs, old, status)
	}
	inits := 0
	for _, r := range reqs {
		if r.Method == "POST" && slices.Contains(r.RPCMethods, "initialize") {
			inits++
			if r.SessionID != "" {
				t.Errorf("the fresh initialize was sent with Mcp-Session-Id %q (the dead session) and answered %d; a fresh initialize carries no session id", r.SessionID, r.Status)
			}
			if r.Authorization != "Bearer "+token {
				t.Errorf("the fresh initialize sent Authorization %q, want the live config's", r.Authorization)
			}
		}
	}
	if inits != 1 {
		t.Errorf("%d initialize requests after the restart, want exactly 1", inits)
	}
	for _, failed := range []string{"listing tools failed", "upstream connection lost"} {
		if strings.Contains(w.Logs.String(), failed) {
			t.Errorf("the fallback was not invisible: the log says %q:\n%s", failed, w.Logs)
		}
	}
}

// The first request on a resumed session answered 403 (credentials no
// longer accepted for it) is handled like 404 and 401: the record is
// dropped, one fresh initialize is done with the live config's headers, and
// the caller sees nothing; the new session is the one kept for next time.
func TestSessionForbiddenOnceReinitializes(t *testing.T) {
	f, w := sessionSetup(t)
	echoThrough(t, w)
	old := f.HTTP().SessionIDs()[0]
	w.Stop()
	const rotated = "tok-ROTATED-9c3e"
	t.Setenv("UPSTREAM_TOKEN", rotated)
	mark := len(f.HTTP().Requests())
	f.HTTP().RefuseNext(1, http.StatusForbidden)
	w = restart(t, w)
	w.WaitReady(t, "up")
	echoThrough(t, w)
	reqs := f.HTTP().Requests()[mark:]
	freshInitializeChecks(t, w, reqs, old, http.StatusForbidden, rotated)
	if n := f.Initializes(); n != 2 {
		t.Fatalf("initializes = %d, want 2 (one fresh initialize after the 403)", n)
	}
	fresh := ""
	for _, r := range reqs {
		if r.Method == "POST" && slices.Contains(r.RPCMethods, "tools/call") {
			fresh = r.SessionID
		}
	}
	if fresh == "" || fresh == old {
		t.Fatalf("the call went out on session %q, want a fresh one (the resumed one was %q)", fresh, old)
	}
	var list []struct{ Server, Mode string }
	w.API(t, "GET", "/v1/sessions", nil, &list)
	if len(list) != 1 || list[0].Mode == "resumed" {
		t.Fatalf("/v1/sessions = %+v, want only the fresh session of up", list)
	}
	// The fresh session replaced the record: the next start resumes it.
	w = restart(t, w)
	w.WaitReady(t, "up")
	mark = len(f.HTTP().Requests())
	echoThrough(t, w)
	if n := f.Initializes(); n != 2 {
		t.Fatalf("initializes after a second restart = %d, want still 2 (the fresh session resumed)", n)
	}
	for _, id := range postSessions(f, mark) {
		if id != fresh {
			t.Fatalf("after the second restart a request used session %q, want the fresh %q", id, fresh)
		}
	}
}

func TestSessionUnauthorizedTwiceSurfaces(t *testing.T) {
	f, w := sessionSetup(t)
	echoThrough(t, w)
	w.Stop()
	f.HTTP().UnauthorizedNext(2)
	w = restart(t, w)
	// The first request on the resumed session (the tool listing) gets the
	// fresh initialize's 401 as the upstream gave it; the connection then
	// starts over.
	defer func() {
		if t.Failed() {
			t.Log(w.Logs.String())
		}
	}()
	wardentest.WaitFor(t, 20*time.Second, "the second 401 to surface", func() bool {
		return strings.Contains(w.Logs.String(), `msg="listing tools failed" server=up err="calling \"tools/list\": sending \"tools/list\": Unauthorized"`)
	})
	if n := f.Initializes(); n > 2 {
		t.Fatalf("initializes = %d: the fallback may initialize once per resumed session", n)
	}
	refused := 0
	for _, r := range f.HTTP().Requests() {
		if r.Status == 401 {
			refused++
		}
	}
	if refused != 2 {
		t.Fatalf("upstream refused %d requests, want 2", refused)
	}
}

// A 404 on a session that has been in use (not the first request after a
// resume) is not retried: the call is refused as UPSTREAM_UNAVAILABLE, never
// reaches the upstream on any session, latches nothing, and the next call
// starts a fresh session.
func TestSessionLater404NotRetried(t *testing.T) {
	f, w := sessionSetup(t)
	cs := w.Connect(t, "/mcp/up", nil)
	wardentest.CallText(t, cs, "echo", map[string]any{})
	old := f.HTTP().SessionIDs()[0]
	mark := len(f.HTTP().Requests())
	f.HTTP().ForgetSessions()
	// A write answered 404 was not processed: it fails without latching.
	res := wardentest.CallResult(t, cs, "write_value", map[string]any{"key": "k", "value": "v"})
	wardentest.WantRefusal(t, res, "UPSTREAM_UNAVAILABLE", "Nothing was sent")
	if n := f.WriteDispatches(); n != 0 {
		t.Fatalf("the write answered 404 reached the upstream %d times (retried on a fresh session?)", n)
	}
	wardentest.WaitFor(t, 20*time.Second, "a fresh session", func() bool {
		return f.Initializes() == 2
	})
	wardentest.CallText(t, cs, "echo", map[string]any{"after": "404"})
	var onOld, total int
	for _, r := range f.HTTP().Requests()[mark:] {
		if r.Method == "POST" && slices.Contains(r.RPCMethods, "tools/call") {
			total++
			if r.SessionID == old {
				onOld++
				if r.Status != http.StatusNotFound {
					t.Fatalf("a tools/call on the forgotten session was answered %d, want 404", r.Status)
				}
			}
		}
	}
	if onOld != 1 || total != 2 {
		t.Fatalf("tools/call requests after the 404: %d on the dead session, %d in all; want 1 and 2 (the write once, refused, then the echo)", onOld, total)
	}
	if n, v := f.WriteDispatches(), f.Value("k"); n != 0 || v != "" {
		t.Fatalf("the refused write reached the upstream later: %d dispatches, value %q", n, v)
	}
	var latches []any
	w.API(t, "GET", "/v1/writes", nil, &latches)
	if len(latches) != 0 {
		t.Fatalf("a write answered 404 latched the server: %v", latches)
	}
}

func TestSessionRecordHygiene(t *testing.T) {
	t.Run("removed at reload", func(t *testing.T) {
		f, w := sessionSetup(t)
		echoThrough(t, w)
		wardentest.WriteConfig(t, w.ConfigPath, map[string]any{})
		wardentest.WaitFor(t, 20*time.Second, "record dropped and DELETE sent", func() bool {
			var list []any
			w.API(t, "GET", "/v1/sessions", nil, &list)
			return len(list) == 0 && f.HTTP().Deletes() == 1
		})
	})
	t.Run("removed while down", func(t *testing.T) {
		_, w := sessionSetup(t)
		echoThrough(t, w)
		w.Stop()
		wardentest.WriteConfig(t, w.ConfigPath, map[string]any{})
		w = wardentest.StartWith(t, w.ConfigPath, w.StateDir)
		var list []any
		w.API(t, "GET", "/v1/sessions", nil, &list)
		if len(list) != 0 {
			t.Fatalf("record of a removed server kept: %v", list)
		}
		if !strings.Contains(w.Logs.String(), "left to expire") {
			t.Fatalf("no 'left to expire' in the log:\n%s", w.Logs)
		}
	})
	t.Run("url changed", func(t *testing.T) {
		f, w := sessionSetup(t)
		echoThrough(t, w)
		g := fixture.NewServer(fixture.Options{})
		wardentest.WriteConfig(t, w.ConfigPath, map[string]any{"up": map[string]any{"url": g.Serve(t), "trusted": true}})
		var list []struct{ Server, Session_ID_Prefix string }
		wardentest.WaitFor(t, 20*time.Second, "old session ended and a new one made and recorded", func() bool {
			w.API(t, "GET", "/v1/sessions", nil, &list)
			return f.HTTP().Deletes() == 1 && g.Initializes() == 1 && len(list) > 0
		})
		if len(list) != 1 || !strings.HasPrefix(g.HTTP().SessionIDs()[0], strings.TrimSuffix(list[0].Session_ID_Prefix, "…")) {
			t.Fatalf("sessions after URL change = %+v, want only the new upstream's", list)
		}
	})
}

// kill -9 instead of a clean stop: the session is still resumed.
func TestSessionResumedAfterKill9(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	url := f.Serve(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	listen := "127.0.0.1:" + itoa(testenv.FreePort(t))
	b, _ := json.Marshal(map[string]any{"listen": listen, "mcpServers": map[string]any{"up": map[string]any{"url": url, "trusted": true}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.BuildBinary(t, "./cmd/warden")
	serve := func() *testenv.Process {
		p := testenv.StartProcess(t, exec.Command(bin, "serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state")))
		testenv.WaitHTTP(t, "http://"+listen+"/healthz", 20*time.Second)
		return p
	}
	call := func() {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + listen + "/mcp/up"}, wardentest.Session2025)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		wardentest.CallText(t, cs, "echo", map[string]any{})
	}
	p := serve()
	call()
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.Wait(10 * time.Second)
	serve()
	call()
	if n := f.Initializes(); n != 1 {
		t.Fatalf("initializes = %d after kill -9 and restart, want 1", n)
	}
}
