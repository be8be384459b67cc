package e2e

import (
	"context"
	"testing"
	"runtime"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/fixture"
	"github.com/wardenmcp/warden/internal/wardentest"
)

func TestZZDebugCancel(t *testing.T) {
	slow := fixture.NewServer(fixture.Options{Name: "slow"})
	w := wardentest.Start(t, map[string]any{"slow": map[string]any{"url": slow.Serve(t), "trusted": true}})
	w.WaitReady(t, "slow")
	cs := w.Connect(t, "/mcp", nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow__write_value", Arguments: map[string]any{"key": "k", "value": "v", "sleep_ms": 20000}})
		errc <- err
	}()
	slow.WaitWriteDispatches(context.Background(), 1)
	cancel()
	t.Log(<-errc)
	time.Sleep(3 * time.Second)
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "Notify") || strings.Contains(g, "cancelCall") || strings.Contains(g, "upstream.") {
			t.Log(g)
		}
	}
	t.Log("cancelled:", slow.WritesCancelled())
	var writes any
	w.API(t, "GET", "/v1/writes", nil, &writes)
	t.Logf("writes %v", writes)
	for _, r := range slow.HTTP().Requests() {
		t.Logf("%s %v %d", r.Method, r.RPCMethods, r.Status)
	}
	t.Log(w.Logs)
}
