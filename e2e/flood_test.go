package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
	"github.com/wardenmcp/warden/upstream"
)

// A trusted stdio server that floods log messages is throttled and
// reported, and a client that stops reading loses messages rather than
// holding Warden's memory: the drops are counted in /metrics, what is
// queued toward clients stays under the per-session bound, the other
// clients still get messages (no more than the server's rate allows), and
// calls and /healthz keep working meanwhile.
func TestNotificationFlood(t *testing.T) {
	bin := testenv.BuildBinary(t, fixturePkg)
	// The server is added once the events are followed: a flood that
	// began before would be reported before, and never again while it
	// lasts.
	w := wardentest.Start(t, map[string]any{})
	events := w.FollowEvents(t)
	w.Reload(t, func(servers map[string]any) {
		servers["flood"] = map[string]any{"command": bin, "args": []string{"-flood", "-1", "-flood-size", "4096"}, "trusted": true}
	})
	w.WaitReady(t, "flood")

	start := time.Now()
	var got [3]atomic.Int64
	heard := make(chan struct{}, 1)
	var clients []*mcp.ClientSession
	for i := range got {
		cs := w.Connect(t, "/mcp", &mcp.ClientOptions{LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) {
			got[i].Add(1)
			select {
			case heard <- struct{}{}:
			default:
			}
		}})
		if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cs)
	}
	stuckClient(t, w.URL("/mcp/flood"))

	// A flood is reported once the server's burst allowance is spent: at
	// the read rate Warden keeps under load, that may take tens of seconds.
	events.Await(t, 60*time.Second, "a flood reported for server flood", func(e wardentest.Event) bool {
		var f upstream.Flood
		return e.Name == "notifications" && e.Server == "flood" && json.Unmarshal(e.Data, &f) == nil && f.Flooding
	})
	var m string
	wardentest.WaitFor(t, 60*time.Second, "drops for flooding and for the client that does not read", func() bool {
		m = w.Metrics(t)
		return wardentest.MetricValue(m, `warden_notifications_dropped_total{reason="flood",server="flood"}`) > 0 &&
			wardentest.MetricValue(m, `warden_notifications_dropped_total{reason="slow_client",server="flood"}`) > 0
	})
	sessions := len(clients) + 1
	if q := wardentest.MetricValue(m, "warden_client_notifications_queued"); q < 0 || q > float64(256*sessions) {
		t.Fatalf("%v notifications queued toward %d client sessions; at most %d expected:\n%s", q, sessions, 256*sessions, grepLines(m, "warden_"))
	}

	// Meanwhile Warden serves as usual.
	resp, err := http.Get(w.URL("/healthz"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz during a flood: %s", resp.Status)
	}
	if res := wardentest.CallResult(t, clients[0], "flood__"+fixture.ToolEcho, map[string]any{"payload": "still here"}); res.IsError || !strings.Contains(wardentest.ResultText(res), "still here") {
		t.Fatalf("a call during a flood: %+v", res)
	}
	select {
	case <-heard:
	case <-time.After(30 * time.Second):
		t.Fatal("no client got a log message")
	}
	// The rate is an upper bound, whatever the machine's speed.
	limit := float64(upstream.NoticeBurst) + upstream.NoticeRate*time.Since(start).Seconds()
	for i := range got {
		if n := got[i].Load(); float64(n) > limit {
			t.Fatalf("client %d got %d log messages in %v; the server's rate allows at most %.0f", i, n, time.Since(start), limit)
		}
	}
}

// stuckClient opens a session at log level info on url and its event
// stream, which it never reads.
func stuckClient(t testing.TB, url string) { logStream(t, url) }

// logStream opens a session at log level info on url, and its event stream.
// The stream is closed at the end of the test.
func logStream(t testing.TB, url string) io.Reader {
	t.Helper()
	send := func(method, sid, body string) *http.Response {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/json")
		}
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %s", method, url, resp.Status)
		}
		return resp
	}
	drain := func(r *http.Response) *http.Response { io.Copy(io.Discard, r.Body); r.Body.Close(); return r }
	r := drain(send(http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stuck","version":"1"}}}`))
	sid := r.Header.Get("Mcp-Session-Id")
	drain(send(http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	drain(send(http.MethodPost, sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`))
	stream := send(http.MethodGet, sid, "")
	t.Cleanup(func() { stream.Body.Close() })
	return stream.Body
}
