package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A legacy HTTP+SSE upstream (the Go SDK's SSE handler) works through Warden.
func TestLegacySSEUpstream(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	srv := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return f.Server }, nil))
	t.Cleanup(srv.Close)
	w := wardentest.Start(t, map[string]any{"legacy": map[string]any{"url": srv.URL + "/sse", "trusted": true}})
	w.WaitReady(t, "legacy")
	var st struct{ Transport string }
	w.API(t, "GET", "/v1/servers/legacy", nil, &st)
	if st.Transport != "sse" {
		t.Fatalf("transport = %q, want sse inferred from the /sse path", st.Transport)
	}
	cs := w.Connect(t, "/mcp", nil)
	if got := wardentest.CallText(t, cs, "legacy__echo", map[string]any{"over": "sse"}); !strings.Contains(got, "sse") {
		t.Fatalf("echo over legacy SSE = %q", got)
	}
}

// A legacy SSE upstream's tools are listed with their execution (read from
// its answers, as a stdio or streamable HTTP one's), so a tool whose
// definition declares task support runs as a task for a client that
// declares the extension.
func TestLegacySSETaskSupport(t *testing.T) {
	f := fixture.NewServer(fixture.Options{Tasks: true})
	srv := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return f.Server }, nil))
	t.Cleanup(srv.Close)
	w := wardentest.Start(t, map[string]any{"legacy": map[string]any{"url": srv.URL + "/sse", "trusted": true}})
	w.WaitReady(t, "legacy")
	url := w.URL("/mcp/legacy")
	listed, rpcErr := taskRPC(t, url, "tools/list", map[string]any{})
	if !strings.Contains(fmt.Sprint(listed["tools"]), "execution:map[taskSupport:optional]") {
		t.Fatalf("the legacy upstream's tools: %v %v; want their execution listed", listed, rpcErr)
	}
	res, rpcErr := taskRPC(t, url, "tools/call", map[string]any{"name": fixture.ToolSlowCompute, "arguments": map[string]any{"seconds": 0.1, "label": "sse"}})
	id, _ := res["taskId"].(string)
	if rpcErr != nil || res["resultType"] != "task" || id == "" {
		t.Fatalf("slow_compute of the legacy upstream: %v %v; want a task handle", res, rpcErr)
	}
	var got map[string]any
	wardentest.WaitFor(t, 20*time.Second, "the task to complete", func() bool {
		got, rpcErr = taskRPC(t, url, "tasks/get", map[string]any{"taskId": id})
		return rpcErr != nil || got["status"] != "working"
	})
	if got["status"] != "completed" || !strings.Contains(fmt.Sprint(got["result"]), "sse: computed in 0.1s") {
		t.Errorf("the task: %v %v; want it completed", got, rpcErr)
	}
}
