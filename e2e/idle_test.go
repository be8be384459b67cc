package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A client session with no request in progress for the idle limit is
// closed: the client's next request is answered "session not found" (and a
// new session works). A session with its event stream open, or with calls
// coming, is kept.
func TestIdleClientSessionsAreClosed(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	wardentest.WriteConfig(t, cfg, map[string]any{"everything": map[string]any{"url": testenv.StartEverythingServer(t), "trusted": true}})
	w := wardentest.StartWith(t, cfg, filepath.Join(dir, "state"), func(o *daemon.Options) { o.SessionIdle = 600 * time.Millisecond })
	w.WaitReady(t, "everything")
	connect := func(stream bool) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "idle-test", Version: "1"}, nil)
		cs, err := c.Connect(ctxT(t, 20*time.Second), &mcp.StreamableClientTransport{Endpoint: w.URL("/mcp"), DisableStandaloneSSE: !stream}, wardentest.Session2025)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__test_simple_text", Arguments: map[string]any{}})
		return err
	}
	idle, streaming, busy := connect(false), connect(true), connect(false)
	for _, cs := range []*mcp.ClientSession{idle, streaming, busy} {
		if err := call(cs); err != nil {
			t.Fatalf("first call: %v", err)
		}
	}
	// The sleep paces a session in use for 2s, past the idle timeout.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := call(busy); err != nil {
			t.Fatalf("a session in use was closed: %v\n%s", err, w.Logs)
		}
	}
	if err := call(streaming); err != nil {
		t.Fatalf("a session with its event stream open was closed: %v\n%s", err, w.Logs)
	}
	if err := call(idle); err == nil {
		t.Fatalf("a session idle for 2s (limit 0.6s) still answers\n%s", w.Logs)
	}
	if err := call(connect(false)); err != nil {
		t.Fatalf("a new session after the idle one was closed: %v", err)
	}
}
