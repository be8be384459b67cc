package e2e

import (
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// An official SDK client that Warden's endpoint refuses shows why, not a
// bare "Bad Request": the refusal is a JSON-RPC error with the reason and
// the fix, under the HTTP status. In both eras, over HTTP and through
// warden stdio.
func TestRefusalsReachTheClient(t *testing.T) {
	w := wardentest.Start(t, map[string]any{
		"s":   map[string]any{"url": fixture.NewServer(fixture.Options{}).Serve(t), "trusted": true},
		"off": map[string]any{"url": "http://127.0.0.1:1/mcp", "disabled": true},
	})
	w.WaitReady(t, "s")
	connect := func(transport mcp.Transport, version string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "refused", Version: "1"}, nil).Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err == nil {
			cs.Close()
		}
		return err
	}
	wantReason := func(what string, err error, reason string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("%s: %v; want the reason %q", what, err, reason)
		}
	}
	refused := []struct{ path, reason string }{
		{"/mcp?view=bogus", `no view named "bogus"; use /mcp?view=search`},
		{"/mcp/nosuch", "no server named nosuch is configured; see: warden servers list"},
		{"/mcp/off", "server off is disabled; to use it"},
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		for _, c := range refused {
			err := connect(&mcp.StreamableClientTransport{Endpoint: w.URL(c.path)}, version)
			wantReason(version+" "+c.path, err, c.reason)
		}
		// A page of another site (DNS rebinding): refused, saying why.
		rebound := &http.Client{Transport: hostRewriter{"evil.example:80"}}
		err := connect(&mcp.StreamableClientTransport{Endpoint: w.URL("/mcp/s"), HTTPClient: rebound}, version)
		wantReason(version+" from another host", err, "Host evil.example:80 is not this machine")
	}

	// Through warden stdio the client gets the same answer.
	for _, c := range refused[1:] {
		server := strings.TrimPrefix(c.path, "/mcp/")
		cmd := exec.Command(testenv.BuildBinary(t, "./cmd/warden"), "stdio", "--server", server, "--config", w.ConfigPath, "--state-dir", w.StateDir)
		wantReason("warden stdio --server "+server, connect(&mcp.CommandTransport{Command: cmd}, "2025-11-25"), c.reason)
	}
}

// hostRewriter sends each request as for another host, as a browser does
// for a page whose name now resolves to this machine.
type hostRewriter struct{ host string }

func (h hostRewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return http.DefaultTransport.RoundTrip(r)
}
