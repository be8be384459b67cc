package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
