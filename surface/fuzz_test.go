package surface_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// rawSession is an initialized client session on an MCP endpoint, spoken
// to in raw HTTP as a hostile client would.
type rawSession struct {
	url, id string
	client  *http.Client
}

func (s *rawSession) post(body []byte) (*http.Response, []byte, error) {
	return s.postWith(string(body), [2]string{})
}

// postWith posts body with header (name, value) set, if named.
func (s *rawSession) postWith(body string, header [2]string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	if header[0] != "" {
		req.Header.Set(header[0], header[1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func openRaw(f testing.TB, w *wardentest.Warden, path string) *rawSession {
	s := &rawSession{url: w.URL(path), client: &http.Client{Timeout: 20 * time.Second}}
	resp, _, err := s.post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		f.Fatalf("initialize: %v %v", resp, err)
	}
	s.id = resp.Header.Get("Mcp-Session-Id")
	if resp, _, err = s.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil || resp.StatusCode != http.StatusAccepted {
		f.Fatalf("initialized: %v %v", resp, err)
	}
	return s
}

// messages are the JSON-RPC messages of an answer: its JSON body (each
// answer of a batch refused), or the data of each event of its event
// stream.
func messages(t *testing.T, resp *http.Response, body []byte) [][]byte {
	t.Helper()
	ct := resp.Header.Get("Content-Type")
	switch {
	case len(body) == 0:
		return nil
	case strings.HasPrefix(ct, "application/json"):
		var batch []json.RawMessage
		if body[0] != '[' || json.Unmarshal(body, &batch) != nil {
			return [][]byte{body}
		}
		out := make([][]byte, len(batch)) // the answers to a batch refused
		for i, m := range batch {
			out[i] = m
		}
		return out
	case strings.HasPrefix(ct, "text/event-stream"):
		var out [][]byte
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				out = append(out, bytes.Clone(d))
			}
		}
		return out
	}
	return nil // a plain-text refusal
}

// FuzzMCPRequest posts whatever body on an initialized session, to the
// endpoint of one server and to the aggregated one (tools/call bodies go
// the fast path). Warden never fails with a 5xx or a dropped connection;
// what it answers as JSON is JSON; an answer to a request carries that
// request's id; and the session still serves a plain call afterwards.
func FuzzMCPRequest(f *testing.F) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(f, map[string]any{"s": map[string]any{"url": up.Serve(f), "trusted": true, "callTimeout": "300ms"}})
	w.WaitReady(f, "s")
	sessions := []*rawSession{openRaw(f, w, "/mcp/s"), openRaw(f, w, "/mcp")}
	echo := []string{fixture.ToolEcho, "s__" + fixture.ToolEcho}
	n := 0
	f.Fuzz(func(t *testing.T, aggregated bool, body []byte) {
		i := 0
		if aggregated {
			i = 1
		}
		s := sessions[i]
		resp, answer, err := s.post(body)
		if err != nil {
			t.Fatalf("POST %q: %v", body, err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("POST %q: %s %s", body, resp.Status, answer)
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		isRequest := json.Unmarshal(body, &req) == nil && req.Method != "" && len(req.ID) > 0 && string(req.ID) != "null"
		for _, m := range messages(t, resp, answer) {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal(m, &msg); err != nil {
				t.Fatalf("POST %q answered with %q, which is not JSON: %v", body, m, err)
			}
			if isRequest && msg.Method == "" && len(msg.ID) > 0 && string(msg.ID) != "null" && !sameJSON(msg.ID, req.ID) {
				t.Fatalf("POST %q answered with id %s: %s", body, msg.ID, m)
			}
		}

		// The session still works.
		n++
		id := fmt.Sprintf(`"check-%d"`, n)
		resp, answer, err = s.post([]byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + echo[i] + `","arguments":{"n":` + fmt.Sprint(n) + `}}}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("after POST %q, a plain call: %v %v %s", body, resp, err, answer)
		}
		ms := messages(t, resp, answer)
		if len(ms) == 0 || !bytes.Contains(ms[len(ms)-1], []byte(id)) || !bytes.Contains(ms[len(ms)-1], []byte(fmt.Sprintf(`{\"n\":%d}`, n))) {
			t.Fatalf("after POST %q, a plain call answered %s", body, answer)
		}
	})
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
