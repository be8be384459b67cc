package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/state"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
	"github.com/wardenmcp/warden/oauth"
)

// The tests here run the client against a whole Warden daemon in this
// process (wardentest): over TCP with the operator token, and on the state
// dir's socket with none.

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start runs a daemon with the fixture upstream fx (untrusted: it starts
// quarantined) and servers, and answers it with a client of its TCP
// address and token.
func start(t *testing.T, servers map[string]any) (*wardentest.Warden, *client.Client) {
	t.Helper()
	all := map[string]any{"fx": map[string]any{"url": fixture.NewServer(fixture.Options{}).Serve(t)}}
	for name, s := range servers {
		all[name] = s
	}
	w := wardentest.Start(t, all)
	c := client.New("http://"+w.Addr, w.Token)
	wardentest.WaitFor(t, 30*time.Second, "fx's tools listed", func() bool {
		s, err := c.Server(ctxT(t), "fx")
		return err == nil && s.Tools.Pending > 0
	})
	return w, c
}

// text is a call result's text.
func text(t *testing.T, c *client.Client, server, tool string, args string) (string, string) {
	t.Helper()
	res, err := c.Call(ctxT(t), server, tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("call %s/%s: %v", server, tool, err)
	}
	return wardentest.ResultText(res), client.Refusal(res)
}

// An operator's review through the client: a quarantined server's tools,
// with and without their definitions; admitting it with its hashes and a
// tool blocked; calls through the policy; quarantining it again; the
// activity the calls left.
func TestReviewThroughTheClient(t *testing.T) {
	_, c := start(t, nil)
	ctx := ctxT(t)
	st, err := c.Status(ctx)
	if err != nil || st.Version != "test" || len(st.Servers) != 1 || st.Servers[0].Name != "fx" {
		t.Fatalf("Status: %+v %v", st, err)
	}
	servers, err := c.Servers(ctx)
	if err != nil || len(servers) != 1 || !servers[0].Quarantined || servers[0].Transport != "http" {
		t.Fatalf("Servers: %+v %v", servers, err)
	}
	tools, err := c.Tools(ctx, "fx")
	if err != nil || len(tools) == 0 {
		t.Fatalf("Tools: %+v %v", tools, err)
	}
	states, err := c.ToolStates(ctx, "fx")
	if err != nil || len(states) != len(tools) {
		t.Fatalf("ToolStates: %d tools %v, want %d", len(states), err, len(tools))
	}
	hashes := map[string]string{}
	for i, tool := range states {
		if tool.Current != nil || tools[i].Current == nil || tool.CurrentHash != tools[i].CurrentHash || tool.Status != approval.StatusPending {
			t.Fatalf("tool %s: states %+v, with definitions %+v; want the same hash, the definition only in Tools", tool.Name, tool, tools[i])
		}
		hashes[tool.Name] = tool.CurrentHash
	}
	if text, refusal := text(t, c, "fx", fixture.ToolEcho, `{"n":1}`); refusal != "SERVER_QUARANTINED" {
		t.Fatalf("a call to the quarantined server: %q %q", text, refusal)
	}

	ans, err := c.ApproveServer(ctx, "fx", approval.ServerApproval{ExpectedHashes: hashes, Block: []string{fixture.ToolDelete}})
	if err != nil || ans.ApprovedCount != len(tools)-1 || ans.BlockedCount != 1 || ans.Quarantined {
		t.Fatalf("ApproveServer: %+v %v", ans, err)
	}
	if text, refusal := text(t, c, "fx", fixture.ToolEcho, `{"n":1}`); text != `{"n":1}` || refusal != "" {
		t.Fatalf("echo after approval: %q %q", text, refusal)
	}
	if _, refusal := text(t, c, "fx", fixture.ToolDelete, `{}`); refusal != "TOOL_BLOCKED" {
		t.Fatalf("a blocked tool's call: refusal %q", refusal)
	}
	if ans, err := c.ApproveTools(ctx, "fx", approval.ToolApproval{Tools: []string{fixture.ToolDelete}, ExpectedHashes: map[string]string{fixture.ToolDelete: hashes[fixture.ToolDelete]}}); err != nil || ans.ApprovedCount != 1 {
		t.Fatalf("ApproveTools: %+v %v", ans, err)
	}
	if ans, err := c.BlockTools(ctx, "fx", []string{fixture.ToolWrite}); err != nil || ans.BlockedCount != 1 {
		t.Fatalf("BlockTools: %+v %v", ans, err)
	}
	if s, err := c.Server(ctx, "fx"); err != nil || s.Tools.Blocked != 1 || s.Tools.Approved != len(tools)-1 {
		t.Fatalf("Server after the decisions: %+v %v", s, err)
	}

	var entries []activity.Entry
	if !wardentest.Poll(10*time.Second, func() bool { // the log is written off the call's path
		entries, err = c.Activity(ctx, activity.Filter{Server: "fx"}, 10)
		return err == nil && slices.ContainsFunc(entries, func(e activity.Entry) bool { return e.Tool == fixture.ToolEcho && e.Outcome == "ok" })
	}) {
		t.Fatalf("Activity: %+v %v; want the echo call", entries, err)
	}
	if s, err := c.Quarantine(ctx, "fx"); err != nil || !s.Quarantined {
		t.Fatalf("Quarantine: %+v %v", s, err)
	}
	if _, refusal := text(t, c, "fx", fixture.ToolEcho, `{}`); refusal != "SERVER_QUARANTINED" {
		t.Fatalf("a call after quarantine: refusal %q", refusal)
	}
}

// A hash that no longer matches the definition is refused with the
// mismatches, which the client reads out of the error; an unknown server
// is a 404 with the API's code.
func TestAPIErrorsFromTheDaemon(t *testing.T) {
	_, c := start(t, nil)
	ctx := ctxT(t)
	_, err := c.ApproveTools(ctx, "fx", approval.ToolApproval{Tools: []string{fixture.ToolEcho}, ExpectedHashes: map[string]string{fixture.ToolEcho: "sha256:stale"}})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != "hash_mismatch" {
		t.Fatalf("a stale hash: %v", err)
	}
	if mm := ae.Mismatches(); len(mm) != 1 || mm[0].Tool != fixture.ToolEcho || mm[0].Expected != "sha256:stale" || mm[0].Current == "" {
		t.Fatalf("Mismatches() = %+v", mm)
	}
	_, err = c.Server(ctx, "nosuch")
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("an unknown server: %v", err)
	}
	if ae.Mismatches() != nil {
		t.Fatal("a 404 has mismatches")
	}
}

// The latches, sessions and a review-page login, as the CLI reads them.
func TestWritesSessionsAndUILogin(t *testing.T) {
	_, c := start(t, nil)
	ctx := ctxT(t)
	if latches, err := c.Writes(ctx); err != nil || len(latches) != 0 {
		t.Fatalf("Writes: %+v %v", latches, err)
	}
	if cl, err := c.ClearWrites(ctx, "fx"); err != nil || cl.Cleared {
		t.Fatalf("ClearWrites of an unlatched server: %+v %v", cl, err)
	}
	if raw, err := c.Sessions(ctx); err != nil || !json.Valid(raw) {
		t.Fatalf("Sessions: %s %v", raw, err)
	}
	l, err := c.UILogin(ctx)
	if err != nil || l.Code == "" || !strings.Contains(l.Path, l.Code) || !l.ExpiresAt.After(time.Now()) {
		t.Fatalf("UILogin: %+v %v", l, err)
	}
}

// The client on the state dir's socket needs no token; with no daemon
// there, it says to start one.
func TestLocalClient(t *testing.T) {
	w, _ := start(t, nil)
	local := client.NewLocal(w.StateDir)
	if st, err := local.Status(ctxT(t)); err != nil || st.Version != "test" {
		t.Fatalf("Status on the socket: %+v %v", st, err)
	}
	if local.Where() != filepath.Join(w.StateDir, state.SocketFile) {
		t.Fatalf("Where = %q, want the socket in the state dir", local.Where())
	}
	_, err := client.NewLocal(t.TempDir()).Status(ctxT(t))
	var ce *client.ConnError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "is the daemon running?") {
		t.Fatalf("no daemon on the socket: %v", err)
	}
}

// Events delivers what the daemon publishes after it returns.
func TestEvents(t *testing.T) {
	_, c := start(t, nil)
	stream, err := c.Events(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	if _, err := c.BlockTools(ctxT(t), "fx", []string{fixture.ToolWrite}); err != nil {
		t.Fatal(err)
	}
	for {
		e, err := stream.Next()
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if e.Type == "tools" && e.Server == "fx" {
			return
		}
	}
}

// Events with a wrong token is the API's refusal.
func TestEventsRefused(t *testing.T) {
	w, _ := start(t, nil)
	_, err := client.New("http://"+w.Addr, "wrong").Events(ctxT(t))
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || ae.Code != "unauthorized" {
		t.Fatalf("Events with a wrong token: %v", err)
	}
}

// Logs prints a stdio server's stderr; following it ends with the context
// and no error; an HTTP server has no such log.
func TestLogs(t *testing.T) {
	_, c := start(t, map[string]any{"noisy": map[string]any{"command": "sh", "args": []string{"-c", "echo 'a line on stderr' >&2; exit 1"}, "trusted": true}})
	var out strings.Builder
	wardentest.WaitFor(t, 30*time.Second, "noisy's stderr in its log", func() bool {
		out.Reset()
		return c.Logs(ctxT(t), "noisy", 0, false, &out) == nil && strings.Contains(out.String(), "a line on stderr")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	out.Reset()
	if err := c.Logs(ctx, "noisy", 1, true, &out); err != nil || !strings.Contains(out.String(), "a line on stderr") {
		t.Fatalf("Logs -f: %q %v; want the last line, then no error when the context ends", out.String(), err)
	}
	var ae *client.APIError
	if err := c.Logs(ctxT(t), "fx", 0, false, &out); !errors.As(err, &ae) {
		t.Fatalf("Logs of an HTTP server: %v, want the API's refusal", err)
	}
}

// An upstream OAuth login through the client: its status, the login the
// person completes in the browser, and the logout that revokes.
func TestAuthThroughTheClient(t *testing.T) {
	as := fixture.NewAuthServer(t)
	up := fixture.NewServer(fixture.Options{}).ServeBehind(t, as.Protect)
	w, c := start(t, map[string]any{"hosted": map[string]any{"url": up, "trusted": true}})
	ctx := ctxT(t)
	wardentest.WaitFor(t, 30*time.Second, "hosted needs a login", func() bool {
		info, err := c.AuthStatus(ctx, "hosted")
		return err == nil && info.State == oauth.StateNeedsLogin
	})
	started, err := c.AuthLogin(ctx, "hosted")
	if err != nil || !strings.HasPrefix(started.AuthorizationURL, as.URL+"/authorize?") {
		t.Fatalf("AuthLogin: %+v %v", started, err)
	}
	resp, err := http.Get(started.AuthorizationURL) // the person's browser, back at Warden's callback
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if info, err := c.AuthStatus(ctx, "hosted"); err != nil || info.State != oauth.StateAuthorized || info.Issuer != as.URL {
		t.Fatalf("after the login: %+v %v (callback %d)", info, err, resp.StatusCode)
	}
	w.WaitReady(t, "hosted")
	if out, err := c.AuthLogout(ctx, "hosted"); err != nil || *out != (api.AuthLogout{Server: "hosted", Revoked: true}) {
		t.Fatalf("AuthLogout: %+v %v", out, err)
	}
}
