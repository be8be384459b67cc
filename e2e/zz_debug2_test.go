package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/fixture"
)

func TestZZDebugCancelDirect(t *testing.T) {
	slow := fixture.NewServer(fixture.Options{Name: "slow"})
	url := slow.Serve(t)
	c := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil { t.Fatal(err) }
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_value", Arguments: map[string]any{"key": "k", "value": "v", "sleep_ms": 20000}})
		errc <- err
	}()
	slow.WaitWriteDispatches(context.Background(), 1)
	cancel()
	t.Log(<-errc)
	time.Sleep(2 * time.Second)
	t.Log("cancelled:", slow.WritesCancelled())
	for _, r := range slow.HTTP().Requests() {
		t.Logf("%s %v %d", r.Method, r.RPCMethods, r.Status)
	}
}
