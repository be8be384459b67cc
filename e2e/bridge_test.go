package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// listenOn makes a restarted Warden listen on addr, where the running
// `warden stdio` expects it (StartWith would pick a new port).
func listenOn(t *testing.T, addr string) func(*daemon.Options) {
	return func(o *daemon.Options) {
		o.Listener.Close()
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen again on %s: %v", addr, err)
		}
		o.Listener = ln
	}
}

// A client of `warden stdio` does not notice Warden restarting: a request
// made while the daemon is down waits for it, later calls work on a new
// session, and list changes reach the client again.
func TestBridgeAcrossWardenRestart(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"up": map[string]any{"url": f.Serve(t), "trusted": true}})
	w.WaitReady(t, "up")

	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs := connectStdio(t, w, c, "2025-11-25")
	defer cs.Close() // ends warden stdio
	if got := wardentest.CallText(t, cs, "up__echo", map[string]any{"n": 1}); got != `{"n":1}` {
		t.Fatalf("echo answered %q", got)
	}

	addr := w.Addr
	w.Stop()
	pinged := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		pinged <- cs.Ping(ctx, nil)
	}()
	time.Sleep(300 * time.Millisecond) // a sleep: the ping must NOT end while Warden is down
	select {
	case err := <-pinged:
		t.Fatalf("a ping while Warden was down ended at once: %v", err)
	default:
	}
	w = wardentest.StartWith(t, w.ConfigPath, w.StateDir, listenOn(t, addr))
	if err := <-pinged; err != nil {
		t.Fatalf("a ping made while Warden restarted: %v\n%s", err, w.Logs)
	}
	w.WaitReady(t, "up")
	wardentest.WaitFor(t, 10*time.Second, "up__echo listed again", func() bool { return slices.Contains(wardentest.ToolNames(t, cs), "up__echo") })
	if got := wardentest.CallText(t, cs, "up__echo", map[string]any{"n": 2}); got != `{"n":2}` {
		t.Fatalf("echo after the restart answered %q", got)
	}

	// The client was told to list again; after that, the upstream's list
	// changes come through the new session's stream.
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the stdio client was not told to list the tools again after the restart")
	}
	for len(changed) > 0 { // list changes of the restart itself
		<-changed
	}
	if !f.ChangeToolsUntil(changed, 15*time.Second) {
		t.Fatal("no tools/list_changed reached the stdio client after the restart")
	}
	if strings.Contains(w.Logs.String(), "duplicate initialized") {
		t.Fatalf("the bridge sent notifications/initialized twice on the new session:\n%s", w.Logs)
	}
}

// `warden stdio` needs only the daemon's address: a server's ${env:} that
// the client's environment lacks (the daemon has it) does not stop it.
func TestBridgeStartsWithoutTheDaemonsVariables(t *testing.T) {
	const secretVar = "WARDEN_E2E_BRIDGE_ONLY_DAEMON_HAS_IT"
	t.Setenv(secretVar, "daemon-side-value") // the in-process daemon's environment
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"up": map[string]any{"url": f.Serve(t), "trusted": true,
		"headers": map[string]string{"X-Token": "${env:" + secretVar + "}"}}})
	w.WaitReady(t, "up")

	cmd := exec.Command(testenv.BuildBinary(t, "./cmd/warden"), "stdio", "--config", w.ConfigPath, "--state-dir", w.StateDir)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, secretVar+"=") })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, wardentest.Session2025)
	if err != nil {
		t.Fatalf("warden stdio without %s in its environment: %v", secretVar, err)
	}
	defer cs.Close()
	if got := wardentest.CallText(t, cs, "up__echo", map[string]any{"n": 1}); got != `{"n":1}` {
		t.Fatalf("echo answered %q", got)
	}
}

// A client of the 2026-07-28 revision speaks it through `warden stdio` too:
// no session, each request answered on its own, through the same policy.
func TestBridgeStatelessClient(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"up": map[string]any{"url": f.Serve(t), "trusted": true}})
	w.WaitReady(t, "up")
	cs := connectStdio(t, w, mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil), "2026-07-28")
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s through warden stdio, want 2026-07-28", v)
	}
	if got := wardentest.CallText(t, cs, "up__echo", map[string]any{"n": 1}); got != `{"n":1}` {
		t.Fatalf("echo answered %q", got)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__nope", Arguments: map[string]any{}}); err == nil || strings.Contains(err.Error(), "warden answered") {
		t.Errorf("an unknown tool: %v; want Warden's JSON-RPC error", err)
	}
}

// connectStdio connects c through `warden stdio` to w, asking for version.
func connectStdio(t *testing.T, w *wardentest.Warden, c *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(testenv.BuildBinary(t, "./cmd/warden"), "stdio", "--config", w.ConfigPath, "--state-dir", w.StateDir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect through warden stdio: %v", err)
	}
	return cs
}
