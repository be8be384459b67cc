package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
)

// A tools/call on a session the upstream negotiated at 2026-07-28 carries
// that revision's standard headers, and the Mcp-Param-* header a listed
// tool's x-mcp-header annotation asks for (SEP-2243); the direct HTTP path
// writes neither, and a 2026 upstream may refuse a call without them.
func TestCallOn2026SessionSendsStandardHeaders(t *testing.T) {
	var mu sync.Mutex
	var got http.Header
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		var m rpcMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2026-07-28","capabilities":{"tools":{}},"serverInfo":{"name":"up","version":"1"}}}`, m.ID)
		case "server/discover": // a server of 2025's initialize only
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}}`, m.ID)
		case "tools/call":
			mu.Lock()
			got = r.Header.Clone()
			mu.Unlock()
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, m.ID)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer up.Close()
	c := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{})
	defer c.Stop()
	if err := c.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := c.Do(context.Background(), func(ctx context.Context, cs *mcp.ClientSession) error {
		_, err := c.CallTool(ctx, cs, &mcp.CallToolParams{Name: "t", Arguments: map[string]any{"region": "us-west1"}}, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for h, want := range map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "t", "Mcp-Param-Region": "us-west1", "Mcp-Protocol-Version": "2026-07-28"} {
		if v := got.Get(h); v != want {
			t.Errorf("tools/call header %s = %q, want %q", h, v, want)
		}
	}
}
