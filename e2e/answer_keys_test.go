package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// keyCaseUpstream is a streamable-HTTP MCP server of a few lines, with one
// read tool "t" whose every call is answered with result, as written: what
// the Go SDK fixture cannot do (it writes its keys right).
func keyCaseUpstream(t *testing.T, result string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodDelete:
			return
		case http.MethodPost:
		default:
			http.Error(w, "no stream here", http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		answer := `"error":{"code":-32601,"message":"method not found"}`
		switch m.Method {
		case "initialize":
			answer = `"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"keys","version":"1"}}`
		case "tools/list":
			answer = `"result":{"tools":[{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`
		case "tools/call":
			answer = `"result":` + result
		case "ping":
			answer = `"result":{}`
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "keys-1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%s}`, m.ID, answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// A result whose keys are spelled in another case ("ISERROR", "Content")
// is read by both call paths as the SDK's client reads it, JSON keys being
// case-sensitive: not an error, and recorded as "ok" in the activity log by
// a Warden with its direct HTTP path as by one without (WARDEN_FASTPATH=off).
func TestResultKeysCaseSensitiveOnBothPaths(t *testing.T) {
	const result = `{"content":[{"type":"text","text":"fine"}],"ISERROR":true,"Content":[{"type":"text","text":"other"}]}`
	url := keyCaseUpstream(t, result)
	got := map[string]string{}
	for _, path := range []string{"direct", "sdk"} {
		var env []string
		if path == "sdk" {
			env = append(env, "WARDEN_FASTPATH=off")
		}
		w := newBinWarden(t, map[string]any{"up": map[string]any{"url": url, "trusted": true}}, env...)
		w.start()
		cs := w.connect("up")
		var res string
		wardentest.WaitFor(t, 20*time.Second, "the tool listed and called", func() bool {
			res = wardentest.TryCall(cs, "t", map[string]any{})
			return !strings.Contains(res, "TOOL_") && !strings.HasPrefix(res, "error:")
		})
		code, out, errOut := w.cli("activity", "--json")
		var entries []struct{ Tool, Outcome string }
		if code != 0 || json.Unmarshal([]byte(out), &entries) != nil || len(entries) == 0 {
			t.Fatalf("%s: activity: exit %d\n%s%s", path, code, out, errOut)
		}
		got[path] = fmt.Sprintf("client got %q, activity outcome %s", res, entries[len(entries)-1].Outcome)
	}
	want := `client got "fine", activity outcome ok`
	for path, g := range got {
		if g != want {
			t.Errorf("%s path: %s; want %s", path, g, want)
		}
	}
}
