package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A hosted server behind OAuth, driven as a person would: Warden finds it
// needs a login and refuses calls with AUTH_REQUIRED; `warden auth login`
// prints the URL, the "browser" follows it back to Warden's callback, and
// the CLI exits 0; calls go through; an expired access token is refreshed
// once (also under concurrent calls); a restart keeps the authorization;
// a grant revoked at the provider and `warden auth logout` both bring
// AUTH_REQUIRED back. No token ever shows in logs, events or answers.
func TestOAuthUpstream(t *testing.T) {
	as, url, cfgPath, stateDir := hostedSetup(t)
	w := wardentest.StartWith(t, cfgPath, stateDir)
	events := w.FollowEvents(t)

	wardentest.WaitFor(t, 30*time.Second, "hosted needs_login", func() bool { return connState(w, "hosted") == "needs_login" })
	cs := w.Connect(t, "/mcp/hosted", nil)
	expectRefusal(t, cs, "AUTH_REQUIRED", "warden auth login hosted")

	oauthLogin(t, testenv.BuildBinary(t, "./cmd/warden"), w.ConfigPath, w.StateDir, "hosted")
	w.WaitReady(t, "hosted")
	expectEcho(t, cs)

	// The access token expires: one refresh, then the call goes through,
	// even for many calls at once.
	as.ExpireAccess()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { expectEcho(t, cs) })
	}
	wg.Wait()
	if n := as.Refreshes(); n != 1 {
		t.Fatalf("%d refreshes for concurrent calls after expiry; want 1", n)
	}
	for _, r := range as.Resources() { // the code exchange's and the refresh's
		if r != url {
			t.Errorf("token request with resource %q, want %q", r, url)
		}
	}

	// A restart keeps the (rotated) tokens.
	w.Stop()
	w = wardentest.StartWith(t, cfgPath, stateDir)
	w.WaitReady(t, "hosted")
	cs = w.Connect(t, "/mcp/hosted", nil)
	expectEcho(t, cs)
	as.ExpireAccess()
	expectEcho(t, cs)
	if n := as.Refreshes(); n != 2 {
		t.Fatalf("%d refreshes after the restart; want 2", n)
	}

	// Revoked at the provider: the refresh is refused, and calls are
	// refused with AUTH_REQUIRED until the next login.
	as.RevokeAll()
	expectRefusal(t, cs, "AUTH_REQUIRED", "warden auth login hosted")
	if got := authState(t, w, "hosted"); got != "needs_login" {
		t.Fatalf("auth state after revocation %q, want needs_login", got)
	}
	oauthLogin(t, testenv.BuildBinary(t, "./cmd/warden"), w.ConfigPath, w.StateDir, "hosted")
	expectEcho(t, cs)

	// Logout revokes at the provider and forgets.
	code, out, errOut := w.CLI(t, "auth", "logout", "hosted")
	if code != 0 || !strings.Contains(out, "tokens revoked") {
		t.Fatalf("auth logout: exit %d\n%s%s", code, out, errOut)
	}
	if as.Revokes() != 2 {
		t.Fatalf("%d revocations; want 2 (refresh and access token)", as.Revokes())
	}
	expectRefusal(t, cs, "AUTH_REQUIRED", "warden auth login hosted")
	code, out, _ = w.CLI(t, "auth", "status")
	if code != 0 || !strings.Contains(out, "needs_login") {
		t.Fatalf("auth status: exit %d\n%s", code, out)
	}

	// Secrets: no token in the log, events, API answers or activity.
	var status, activity json.RawMessage
	w.API(t, "GET", "/v1/servers/hosted/auth", nil, &status)
	w.API(t, "GET", "/v1/activity", nil, &activity)
	shown := w.Logs.String() + events.Raw() + string(status) + string(activity) + out
	for _, tok := range as.Issued() {
		if strings.Contains(shown, tok) {
			t.Fatalf("a token shows in logs, events or answers:\n%s", shown)
		}
	}
}

// hostedSetup starts the fixture behind an authorization server and writes
// a config naming it "hosted"; it answers the authorization server, the
// fixture's URL, the config's path and a state dir.
func hostedSetup(t *testing.T) (as *fixture.AuthServer, url, cfgPath, stateDir string) {
	as = fixture.NewAuthServer(t)
	up := httptest.NewServer(as.Protect(fixture.NewServer(fixture.Options{}).HTTPHandler()))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	cfgPath, stateDir = filepath.Join(dir, "config.json"), filepath.Join(dir, "state")
	url = up.URL + "/mcp"
	wardentest.WriteConfig(t, cfgPath, map[string]any{"hosted": map[string]any{"url": url, "trusted": true}})
	return as, url, cfgPath, stateDir
}

// Killed with -9 while its refresh is at the authorization server, Warden
// starts again still authorized: the stored grant is intact and refreshes.
func TestOAuthKill9DuringRefresh(t *testing.T) {
	as := fixture.NewAuthServer(t)
	up := httptest.NewServer(as.Protect(fixture.NewServer(fixture.Options{}).HTTPHandler()))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	cfgPath, stateDir := filepath.Join(dir, "config.json"), filepath.Join(dir, "state")
	base := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg, _ := json.Marshal(map[string]any{"listen": base, "mcpServers": map[string]any{"hosted": map[string]any{"url": up.URL + "/mcp", "trusted": true}}})
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.BuildBinary(t, "./cmd/warden")
	serve := func() *testenv.Process {
		p := testenv.StartProcess(t, exec.Command(bin, "serve", "--config", cfgPath, "--state-dir", stateDir))
		testenv.WaitHTTP(t, "http://"+base+"/healthz", 20*time.Second)
		return p
	}
	p := serve()
	oauthLogin(t, bin, cfgPath, stateDir, "hosted")
	connect := func() *mcp.ClientSession {
		return wardentest.ConnectURL(t, "http://"+base+"/mcp/hosted", nil, nil)
	}
	cs := connect()
	expectEcho(t, cs)

	held := make(chan struct{}, 1)
	release := as.HoldRefresh(held)
	as.ExpireAccess()
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: fixture.ToolEcho, Arguments: map[string]any{"text": "x"}})
	<-held
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(10 * time.Second); err == nil {
		t.Fatal("warden exited cleanly after SIGKILL")
	}
	<-held // the authorization server saw the refresh's connection close
	release()

	serve()
	expectEcho(t, connect())
	if n := as.Refreshes(); n != 1 { // the one after the restart
		t.Fatalf("%d refreshes; want 1", n)
	}
}

// oauthLogin runs `warden auth login SERVER --no-browser`, plays the
// browser on the URL it prints, and checks that it exits 0.
func oauthLogin(t *testing.T, bin, cfgPath, stateDir, server string) {
	t.Helper()
	cmd := exec.Command(bin, "auth", "login", server, "--no-browser", "--config", cfgPath, "--state-dir", stateDir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	p := testenv.StartProcess(t, cmd)
	rd := bufio.NewReader(stdout)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http") {
		p.Kill()
		t.Fatalf("auth login printed %q (%v)\n%s", line, err, stderr.String())
	}
	resp, err := http.Get(strings.TrimSpace(line)) // the authorization server redirects to Warden's callback
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/oauth/callback" {
		t.Fatalf("callback answered %s at %s: %s", resp.Status, resp.Request.URL.Path, page)
	}
	// The callback takes a login's state once, and nothing it did not start.
	for _, u := range []string{resp.Request.URL.String(), resp.Request.URL.Scheme + "://" + resp.Request.URL.Host + "/oauth/callback?code=x&state=forged"} {
		again, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		again.Body.Close()
		if again.StatusCode != http.StatusBadRequest {
			t.Fatalf("callback %s answered %s; want 400", u, again.Status)
		}
	}
	rest, _ := io.ReadAll(rd)
	if err := p.Wait(30 * time.Second); err != nil {
		t.Fatalf("auth login: %v\n%s%s", err, rest, stderr.String())
	}
	if !strings.Contains(string(rest), "authorized") {
		t.Fatalf("auth login said: %s", rest)
	}
}

func connState(w *wardentest.Warden, server string) string {
	c, ok := w.D.Gateway().Upstream(server)
	if !ok {
		return ""
	}
	return c.Connection().State
}

func authState(t *testing.T, w *wardentest.Warden, server string) string {
	var info struct {
		State string `json:"state"`
	}
	w.API(t, "GET", "/v1/servers/"+server+"/auth", nil, &info)
	return info.State
}

func expectEcho(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolEcho, Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError {
		t.Errorf("echo: %v %v", err, wardentest.ResultText(res))
	}
}

func expectRefusal(t *testing.T, cs *mcp.ClientSession, code, text string) {
	t.Helper()
	wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolEcho, map[string]any{"text": "hi"}), code, text)
}

// Killed with -9 just after the authorization server rotated the refresh
// token and a call carried the new access token upstream (killed inside
// the upstream, before it answered), Warden starts again still authorized:
// the rotated tokens were stored before the call used them, so no login and
// no refresh are needed.
func TestOAuthKill9AfterRotation(t *testing.T) {
	u, entry, _ := newResumedUpstream(t, true)
	w := newBinWarden(t, map[string]any{"hosted": entry})
	w.start()
	w.login("hosted")
	cs := w.connect("hosted")
	awaitEcho(t, cs)

	killed := make(chan struct{})
	var once sync.Once
	u.as.OnUse(func(tok string) {
		for _, r := range u.as.Rotations() {
			if r.Access == tok {
				once.Do(func() { w.p.Signal(syscall.SIGKILL); close(killed) })
			}
		}
	})
	u.as.ExpireAccess()
	go wardentest.TryCall(cs, fixture.ToolEcho, map[string]any{"text": "x"})
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("no call carried the rotated access token")
	}
	if err := w.p.Wait(10 * time.Second); err == nil {
		t.Fatal("warden exited cleanly after SIGKILL")
	}
	u.as.OnUse(nil)

	w.start()
	expectEcho(t, w.connect("hosted"))
	if n := u.as.Refreshes(); n != 1 {
		t.Fatalf("%d refreshes; want 1 (the rotation before the kill)", n)
	}
	if code, out, _ := w.cli("auth", "status", "hosted"); code != 0 || !strings.Contains(out, "authorized") || strings.Contains(out, "needs_login") {
		t.Fatalf("auth status after the restart: exit %d\n%s", code, out)
	}
}

// A login lost to a crash in the window no store can close (the
// authorization server rotated the refresh token, and Warden died before
// its answer arrived) ends in one refused refresh and AUTH_REQUIRED naming
// `warden auth login hosted`: the refused refresh token is not tried again,
// whatever the calls that follow.
func TestOAuthLoginLostInRotation(t *testing.T) {
	u, entry, _ := newResumedUpstream(t, true)
	w := newBinWarden(t, map[string]any{"hosted": entry})
	w.start()
	w.login("hosted")
	cs := w.connect("hosted")
	awaitEcho(t, cs)

	held := make(chan struct{}, 2)
	release := u.as.HoldRotatedAnswer(held)
	u.as.ExpireAccess()
	go wardentest.TryCall(cs, fixture.ToolEcho, map[string]any{"text": "x"})
	<-held // rotated; the answer waits
	w.kill9()
	<-held // the answer was never delivered
	release()

	w.start()
	cs = w.connect("hosted")
	for range 3 {
		expectRefusal(t, cs, "AUTH_REQUIRED", "warden auth login hosted")
	}
	if code, out, _ := w.cli("auth", "status", "hosted"); code != 0 || !strings.Contains(out, "needs_login") {
		t.Fatalf("auth status: exit %d\n%s", code, out)
	}
	w.stop()
	w.start() // the next start does not try the refused token either
	expectRefusal(t, w.connect("hosted"), "AUTH_REQUIRED", "warden auth login hosted")
	if n := u.as.RefusedRefreshes(); n != 1 {
		t.Fatalf("the authorization server refused %d refreshes; want 1 (the spent token tried once, then a login asked for)", n)
	}
	if !strings.Contains(w.output(), "run warden auth login hosted") {
		t.Fatalf("the log does not say what to run:\n%s", w.output())
	}
	w.login("hosted") // what it says to run works, with the client registered before
	awaitEcho(t, w.connect("hosted"))
	if n := u.as.Registrations(); n != 1 {
		t.Fatalf("%d client registrations; want 1 (the second login offers the first one's client again)", n)
	}
}
