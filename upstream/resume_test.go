package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/config"
)

// retryServer is a streamable-HTTP upstream that ends a tools/call's event
// stream after a priming event carrying an id and a retry field, and
// answers the call on the GET that resumes it (as the official suite's
// sse-retry scenario does).
type retryServer struct {
	retry string // the retry field's value; "" sends none

	mu       sync.Mutex
	callID   json.RawMessage
	closedAt time.Time
	resumes  []resume
}

type resume struct {
	lastEventID string
	after       time.Duration // since the call's stream was closed
}

func (s *retryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Mcp-Session-Id", "s1")
	if r.Method == http.MethodGet {
		s.mu.Lock()
		id, closedAt := s.callID, s.closedAt
		if r.Header.Get("Last-Event-ID") == "" || id == nil {
			s.mu.Unlock()
			http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		s.resumes = append(s.resumes, resume{r.Header.Get("Last-Event-ID"), time.Since(closedAt)})
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", id)
		return
	}
	var m rpcMessage
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch m.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"retry","version":"1"}}}`, m.ID)
	case "server/discover": // a server of 2025's initialize only
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, m.ID)
	case "tools/list":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}}`, m.ID)
	case "tools/call":
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "id: e1\n")
		if s.retry != "" {
			io.WriteString(w, "retry: "+s.retry+"\n")
		}
		io.WriteString(w, "data: \n\n")
		w.(http.Flusher).Flush()
		s.mu.Lock()
		s.callID, s.closedAt = m.ID, time.Now()
		s.mu.Unlock()
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// A tools/call whose event stream the upstream ends before the answer is
// resumed with Last-Event-ID only after the reconnection time the
// upstream's retry field asked for; without one, at once.
func TestCallResumesAfterRetry(t *testing.T) {
	for _, tc := range []struct {
		retry    string
		min, max time.Duration
	}{
		{retry: "400", min: 400 * time.Millisecond, max: 5 * time.Second},
		{retry: "", min: 0, max: 5 * time.Second},
		{retry: "4x", min: 0, max: 5 * time.Second}, // not a number: ignored
	} {
		t.Run("retry="+tc.retry, func(t *testing.T) {
			s := &retryServer{retry: tc.retry}
			up := httptest.NewServer(s)
			defer up.Close()
			c := Start(&config.Server{Name: "up", URL: up.URL, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{})
			defer c.Stop()
			var res *answer.Result
			err := c.Do(context.Background(), func(ctx context.Context, cs *mcp.ClientSession) (err error) {
				res, err = c.callTool(ctx, cs, &Call{Params: &mcp.CallToolParams{Name: "t", Arguments: map[string]any{}}})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(res.Raw); !strings.Contains(got, `"text":"resumed"`) {
				t.Fatalf("result %s, want the one sent on the resumed stream", got)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.resumes) != 1 {
				t.Fatalf("%d resumes, want 1: %+v", len(s.resumes), s.resumes)
			}
			r := s.resumes[0]
			if r.lastEventID != "e1" || r.after < tc.min || r.after > tc.max {
				t.Fatalf("resumed with Last-Event-ID %q after %s, want e1 after %s to %s", r.lastEventID, r.after, tc.min, tc.max)
			}
		})
	}
}
