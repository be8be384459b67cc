package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// bodyRoutes are the operator routes that take a JSON body. The first
// three change approvals.
var bodyRoutes = []string{"/v1/servers/s/approve", "/v1/servers/s/tools/approve", "/v1/servers/s/tools/block", "/v1/servers/s/call"}

// FuzzBodies posts whatever body to the routes that read one. Warden
// answers every bad body with a 4xx whose body is {"error":{"code",
// "message"}}, never a 5xx or a dropped connection; an approval it refuses
// changes nothing.
func FuzzBodies(f *testing.F) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(f, map[string]any{"s": map[string]any{"url": up.Serve(f), "callTimeout": "300ms"}})
	w.WaitReady(f, "s")
	client := &http.Client{Timeout: 20 * time.Second}
	do := func(t *testing.T, method, path string, body []byte) (int, []byte) {
		req, err := http.NewRequest(method, w.URL(path), bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+w.Token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s %q: %v", method, path, body, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s %q: reading the answer: %v", method, path, body, err)
		}
		return resp.StatusCode, b
	}
	// approvals is what the server's approval state reads as.
	approvals := func(t *testing.T) string {
		code, tools := do(t, "GET", "/v1/servers/s/tools", nil)
		code2, server := do(t, "GET", "/v1/servers/s", nil)
		if code != http.StatusOK || code2 != http.StatusOK {
			t.Fatalf("GET tools %d, server %d", code, code2)
		}
		var s struct {
			Quarantined bool            `json:"quarantined"`
			Tools       json.RawMessage `json:"tools"`
		}
		json.Unmarshal(server, &s)
		b, _ := json.Marshal(s)
		return string(tools) + string(b)
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := bodyRoutes[int(route)%len(bodyRoutes)]
		decides := path != bodyRoutes[3]
		var before string
		if decides {
			before = approvals(t)
		}
		code, answer := do(t, "POST", path, body)
		if code >= 500 {
			t.Fatalf("POST %s %q: %d %s", path, body, code, answer)
		}
		if !json.Valid(answer) {
			t.Fatalf("POST %s %q: %d with a body that is not JSON: %q", path, body, code, answer)
		}
		if code == http.StatusOK {
			return
		}
		var e api.Error
		dec := json.NewDecoder(bytes.NewReader(answer))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Fatalf("POST %s %q: %d %s is not an error answer (%v)", path, body, code, answer, err)
		}
		if decides {
			if after := approvals(t); after != before {
				t.Fatalf("POST %s %q was refused (%d %s) but changed approvals:\n%s\n%s", path, body, code, answer, before, after)
			}
		}
	})
}
