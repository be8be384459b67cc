package surface_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// What the endpoint refuses, whether Warden or the SDK's handler refuses
// it, is answered with the status and a JSON-RPC error that says why,
// under the request's id; but for a session the SDK does not know, whose
// bare 404 tells a client to start a new one, and a request that is no
// JSON-RPC (a GET).
func TestRefusalsInJSONRPC(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": up.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")
	s := openRaw(t, w, "/mcp/s")
	fresh := &rawSession{url: w.URL("/mcp/s"), client: s.client}
	gone := &rawSession{url: w.URL("/mcp/s"), id: "no-such-session", client: s.client}
	big := `{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`
	for _, c := range []struct {
		name    string
		s       *rawSession
		body    string
		header  [2]string // set on the request
		status  int
		id      string
		code    int64
		message string
	}{
		{"content type", s, `{"jsonrpc":"2.0","id":5,"method":"ping"}`, [2]string{"Content-Type", "text/plain"}, 415, "5", -32600, "Content-Type must be 'application/json'"},
		{"accept", s, `{"jsonrpc":"2.0","id":"a","method":"ping"}`, [2]string{"Accept", "application/json"}, 400, `"a"`, -32600, "Accept must contain both"},
		{"too large", fresh, big, [2]string{}, 413, "6", -32600, "larger than 4 MiB"},
		{"no JSON", s, `{"jsonrpc":`, [2]string{}, 400, "null", -32700, "Parse error"},
		{"no message", s, `{"jsonrpc":"2.0","id":8}`, [2]string{}, 400, "8", -32600, `neither "method"`},
		{"unknown method", s, `{"jsonrpc":"2.0","id":9,"method":"no/such"}`, [2]string{}, 400, "9", -32600, "no/such"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body, err := c.s.postWith(c.body, c.header)
			if err != nil {
				t.Fatal(err)
			}
			var a struct {
				ID    json.RawMessage
				Error struct {
					Code    int64
					Message string
				}
			}
			if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal(body, &a) != nil ||
				string(a.ID) != c.id || a.Error.Code != c.code || !strings.Contains(a.Error.Message, c.message) {
				t.Errorf("%s %s\n%s\nwant %d, id %s, code %d, %q", resp.Status, resp.Header.Get("Content-Type"), body, c.status, c.id, c.code, c.message)
			}
		})
	}
	resp, body, err := gone.post([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil || resp.StatusCode != http.StatusNotFound || bytes.Contains(body, []byte("jsonrpc")) {
		t.Errorf("a session not known: %v %v %s; want a bare 404", resp, err, body)
	}
	req, _ := http.NewRequest(http.MethodGet, w.URL("/mcp/nosuch"), nil)
	resp, err = s.client.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if err != nil || resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("a GET of an unknown server's endpoint: %v %v; want 404 in text", resp, err)
	}
}
