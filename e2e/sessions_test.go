package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/fixture"
	"github.com/wardenmcp/warden/internal/testenv"
	"github.com/wardenmcp/warden/internal/wardentest"
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
	if got := callText(t, cs, "echo", map[string]any{"n": 1}); !strings.Contains(got, `"n"`) {
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
	w.Stop()
	f.HTTP().ForgetSessions()
	w = restart(t, w)
	w.WaitReady(t, "up")
	echoThrough(t, w)
	if n := f.Initializes(); n != 2 {
		t.Fatalf("initializes = %d, want exactly 2 (one fresh initialize after the expired resume)", n)
	}
}

func TestSessionUnauthorizedOnceReinitializesWithLiveCredentials(t *testing.T) {
	f, w := sessionSetup(t)
	echoThrough(t, w)
	w.Stop()
	f.HTTP().UnauthorizedNext(1)
	w = restart(t, w)
	w.WaitReady(t, "up")
	echoThrough(t, w)
	if n := f.Initializes(); n != 2 {
		t.Fatalf("initializes = %d, want 2", n)
	}
	if got := f.HTTP().LastAuthorization(); got != "Bearer "+upstreamToken {
		t.Fatalf("fresh initialize sent Authorization %q, want the live config's", got)
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

func TestSessionLater404NotRetried(t *testing.T) {
	f, w := sessionSetup(t)
	cs := w.Connect(t, "/mcp/up", nil)
	callText(t, cs, "echo", map[string]any{})
	old := f.HTTP().SessionIDs()[0]
	mark := len(f.HTTP().Requests())
	f.HTTP().ForgetSessions()
	// A write answered 404 was not processed: it fails without latching.
	res := callResult(t, cs, "write_value", map[string]any{"key": "k", "value": "v"})
	_ = res
	wardentest.WaitFor(t, 20*time.Second, "a fresh session", func() bool {
		return f.Initializes() == 2
	})
	callText(t, cs, "echo", map[string]any{"after": "404"})
	calls := 0
	for _, r := range f.HTTP().Requests()[mark:] {
		if r.SessionID == old && r.Method == "POST" && len(r.RPCMethods) > 0 && r.RPCMethods[0] == "tools/call" {
			calls++
		}
	}
	if calls > 1 {
		t.Fatalf("a tools/call was sent %d times on the dead session; a later 404 must not be retried", calls)
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
		wardentest.WaitFor(t, 20*time.Second, "old session ended and a new one made", func() bool {
			return f.HTTP().Deletes() == 1 && g.Initializes() == 1
		})
		var list []struct{ Server, Session_ID_Prefix string }
		w.API(t, "GET", "/v1/sessions", nil, &list)
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
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: "http://" + listen + "/mcp/up"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		callText(t, cs, "echo", map[string]any{})
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
