// Package wardentest runs a real Warden daemon in the test process, on a
// loopback port, with its own config file and state dir, for end-to-end tests.
package wardentest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// Warden is a daemon started by Start.
type Warden struct {
	t          testing.TB
	ConfigPath string
	StateDir   string
	Addr       string
	Token      string
	Logs       *LogBuffer
	D          *daemon.Daemon

	cancel context.CancelFunc
	done   chan error
}

// LogBuffer collects the daemon's log for assertions.
type LogBuffer = testenv.Buffer

// WriteConfig writes a config file with the given mcpServers map.
func WriteConfig(t testing.TB, path string, servers map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// setListen points the config's listen at addr, where the CLI and `warden
// stdio` look for the daemon.
func setListen(t testing.TB, path, addr string) {
	t.Helper()
	EditConfigFile(t, path, func(cfg map[string]any) { cfg["listen"] = addr })
}

// Start runs Warden with servers as its mcpServers and a fresh state dir.
func Start(t testing.TB, servers map[string]any) *Warden {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	WriteConfig(t, cfg, servers)
	return StartWith(t, cfg, filepath.Join(dir, "state"))
}

// StartWith runs Warden on an existing config file and state dir (for
// restarts), with opts applied to its options. It is stopped in t.Cleanup
// unless stopped before.
func StartWith(t testing.TB, configPath, stateDir string, opts ...func(*daemon.Options)) *Warden {
	t.Helper()
	return start(t, listen(t), configPath, stateDir, opts)
}

// StartConfig runs Warden with the whole config file cfg makes for the
// address Warden will listen on (a config whose publicURL is that
// address), and a fresh state dir.
func StartConfig(t testing.TB, cfg func(addr string) map[string]any) *Warden {
	t.Helper()
	ln := listen(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	b, err := json.MarshalIndent(cfg(ln.Addr().String()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return start(t, ln, path, filepath.Join(dir, "state"), nil)
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func start(t testing.TB, ln net.Listener, configPath, stateDir string, opts []func(*daemon.Options)) *Warden {
	t.Helper()
	// The CLI and `warden stdio` find the daemon through the config's listen.
	setListen(t, configPath, ln.Addr().String())
	w := &Warden{t: t, ConfigPath: configPath, StateDir: stateDir, Logs: &LogBuffer{}, done: make(chan error, 1)}
	ready := make(chan *daemon.Daemon, 1)
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	o := daemon.Options{
		ConfigPath: configPath, StateDir: stateDir, Version: "test", Listener: ln,
		Logger: slog.New(slog.NewTextHandler(w.Logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Ready:  func(d *daemon.Daemon) { ready <- d },
	}
	for _, f := range opts {
		f(&o)
	}
	go func() { w.done <- daemon.Run(ctx, o) }()
	select {
	case w.D = <-ready:
	case err := <-w.done:
		t.Fatalf("warden did not start: %v\n%s", err, w.Logs)
	case <-time.After(20 * time.Second):
		t.Fatalf("warden did not start in 20s\n%s", w.Logs)
	}
	w.Addr, w.Token = w.D.Addr, w.D.Token
	t.Cleanup(w.Stop)
	return w
}

// Stop stops the daemon (a clean stop) and waits for it.
func (w *Warden) Stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.cancel = nil
	select {
	case err := <-w.done:
		if err != nil {
			w.t.Errorf("warden exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		w.t.Errorf("warden did not stop in 30s")
	}
}

// URL is the daemon's base URL plus path.
func (w *Warden) URL(path string) string { return "http://" + w.Addr + path }

// Session2025 asks for a 2025-11-25 session. The tests of session features
// (log levels, progress, subscriptions, cancellation, idle sessions) use it:
// the SDK client would otherwise speak 2026-07-28, which has no sessions.
// The eras are tested against each other in e2e/eras_test.go and by the
// suite's 2026-07-28 requirements.
var Session2025 = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// Connect opens an MCP client session on path ("/mcp" or "/mcp/NAME"), at
// 2025-11-25 (see Session2025).
func (w *Warden) Connect(t testing.TB, path string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return w.ConnectWith(t, path, opts, nil)
}

// ConnectWith is Connect with session options (nil: Session2025), for a
// test of protocol revisions.
func (w *Warden) ConnectWith(t testing.TB, path string, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := dial(w.URL(path), opts, sopts)
	if err != nil {
		t.Fatalf("connect %s: %v\n%s", path, err, w.Logs)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// ConnectURL opens an MCP client session on url, a Warden that runs as a
// process of its own, with session options sopts (nil: Session2025); the
// session is closed at the end of the test.
func ConnectURL(t testing.TB, url string, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	cs, err := dial(url, opts, sopts)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// dial connects an SDK client to url within 20s.
func dial(url string, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) (*mcp.ClientSession, error) {
	if sopts == nil {
		sopts = Session2025
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, sopts)
}

// API calls the operator REST API and decodes the JSON answer into out.
func (w *Warden) API(t testing.TB, method, path string, body any, out any) int {
	t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, w.URL(path), rd)
	req.Header.Set("Authorization", "Bearer "+w.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decoding answer: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// WaitFor polls cond until it is true or fails the test after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	parts.WaitFor(t, timeout, what, cond)
}

// Poll asks cond until it is true (true) or timeout has passed (false),
// for a caller that reports a timeout itself (see parts.Poll).
func Poll(timeout time.Duration, cond func() bool) bool { return parts.Poll(timeout, cond) }

// WaitReady waits until server is connected, the approval records have
// taken a listing of it, and the MCP endpoints serve that listing: a client
// that lists tools then sees them all.
func (w *Warden) WaitReady(t testing.TB, server string) {
	t.Helper()
	g := w.D.Gateway()
	var l gateway.Listing
	WaitFor(t, 30*time.Second, server+" ready", func() bool {
		l = g.Listed(server)
		return g.Connection(server).State == "ready" && l.Seq != 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.D.Surfaces().WaitListed(ctx, server, l.Version); err != nil {
		t.Fatal(err)
	}
}
