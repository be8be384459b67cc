package surface_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
	"github.com/wardenmcp/warden/surface"
)

// The tests of this package's level run the surfaces over a real gateway
// and real policy parts (package parts), with real upstreams (package
// fixture), and speak to them as MCP clients do: with the SDK's client, of
// either era, or in raw HTTP.

// env is the surfaces served on loopback over a gateway with servers.
type env struct {
	*parts.Parts
	S   *surface.Surfaces
	URL string // base URL: the endpoints are URL+"/mcp" and URL+"/mcp/{server}"
}

// Session2025 asks for a 2025 session; without it the SDK client speaks the
// stateless 2026-07-28 revision.
var session2025 = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// newEnv serves the surfaces over the servers of mcpServers (a config's
// mcpServers JSON); idle and maxSessions as for surface.New (0: defaults).
func newEnv(t testing.TB, mcpServers string, idle time.Duration, maxSessions int) *env {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	p := parts.New(t, log)
	s := surface.New(p.Gateway, log, "test", idle, maxSessions)
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	p.Start(t, mcpServers)
	return &env{Parts: p, S: s, URL: srv.URL}
}

// WaitListed waits until the gateway has taken server's listing and the
// surfaces serve it (the lists follow off the gateway's goroutine).
func (e *env) WaitListed(t testing.TB, server string) {
	t.Helper()
	e.Parts.WaitListed(t, server)
	if err := e.S.WaitListed(ctx(t), server, e.Gateway.Listed(server).Version); err != nil {
		t.Fatal(err)
	}
}

// connect opens a client session on path (such as "/mcp"), of the 2025 era
// with session2025, else of the stateless one; it is closed when the test
// ends.
func (e *env) connect(t *testing.T, path string, opts *mcp.ClientOptions, so *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.URL + path}, so)
	if err != nil {
		t.Fatalf("connect %s: %v", path, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// ctx is a context for one step of a test.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

// toolNames lists the tools a session is shown, sorted.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(ctx(t), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// waitTools lists a session's tools until ok accepts them.
func waitTools(t *testing.T, cs *mcp.ClientSession, what string, ok func([]string) bool) {
	t.Helper()
	var names []string
	parts.WaitFor(t, 20*time.Second, what, func() bool {
		names = toolNames(t, cs)
		return ok(names)
	})
}

// has reports whether names holds each of want.
func has(names []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(names, w) {
			return false
		}
	}
	return true
}

// callText calls a tool and answers its text, whether it is an error, and
// its refusal code.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool, string, error) {
	t.Helper()
	res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, "", err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	m, _ := res.Meta["warden/refusal"].(map[string]any)
	code, _ := m["code"].(string)
	return b.String(), res.IsError, code, nil
}

// get does a GET of path on the surfaces.
func (e *env) get(t *testing.T, path string) *http.Response {
	t.Helper()
	resp, err := http.Get(e.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// rawPost posts body to url as a client of the SDK would (JSON, accepting
// JSON and event streams), with headers; it answers the response, its body
// read and closed, and the body.
func rawPost(t *testing.T, url, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}
