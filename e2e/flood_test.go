package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
	"github.com/wardenmcp/warden/upstream"
)

// A trusted stdio server that floods log messages is throttled and
// reported: the drops are counted in /metrics, the clients still get
// messages (no more than the server's rate allows), and calls and /healthz
// keep working meanwhile. The rate is lowered, so that a machine under load
// (and the race detector) that reads fewer notifications a second than the
// default rate still sees the flood.
func TestNotificationFlood(t *testing.T) {
	notices := upstream.NoticeLimit{Rate: 25, Burst: 50}
	w, events := floodWarden(t, notices, 1024)
	start := time.Now()
	var got [3]atomic.Int64
	heard := make(chan struct{}, 1)
	var clients []*mcp.ClientSession
	for i := range got {
		clients = append(clients, logClient(t, w, func() {
			got[i].Add(1)
			select {
			case heard <- struct{}{}:
			default:
			}
		}))
	}
	events.Await(t, 30*time.Second, "a flood reported for server flood", func(e wardentest.Event) bool {
		var f upstream.Flood
		return e.Name == "notifications" && e.Server == "flood" && json.Unmarshal(e.Data, &f) == nil && f.Flooding
	})
	wardentest.WaitFor(t, 30*time.Second, "drops for flooding", func() bool {
		return wardentest.MetricValue(w.Metrics(t), `warden_notifications_dropped_total{reason="flood",server="flood"}`) > 0
	})

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
	limit := float64(notices.Burst) + notices.Rate*time.Since(start).Seconds()
	for i := range got {
		if n := got[i].Load(); float64(n) > limit {
			t.Fatalf("client %d got %d log messages in %v; the server's rate allows at most %.0f", i, n, time.Since(start), limit)
		}
	}
}

// A client that stops reading loses messages rather than holding Warden's
// memory: the drops are counted in /metrics, what is queued toward clients
// stays under the per-session bound, and a client that reads still gets
// messages. At the default rate, what Warden hands on fills the stuck
// client's connection in seconds.
func TestSlowClientLosesNotifications(t *testing.T) {
	w, _ := floodWarden(t, upstream.NoticeLimit{}, 4096)
	var got atomic.Int64
	logClient(t, w, func() { got.Add(1) })
	stuckClient(t, w.URL("/mcp/flood"))
	var m string
	wardentest.WaitFor(t, 60*time.Second, "drops for the client that does not read", func() bool {
		m = w.Metrics(t)
		return wardentest.MetricValue(m, `warden_notifications_dropped_total{reason="slow_client",server="flood"}`) > 0
	})
	if q := wardentest.MetricValue(m, "warden_client_notifications_queued"); q < 0 || q > 2*256 {
		t.Fatalf("%v notifications queued toward 2 client sessions; at most %d expected:\n%s", q, 2*256, grepLines(m, "warden_"))
	}
	before := got.Load()
	wardentest.WaitFor(t, 30*time.Second, "the reading client to get more messages", func() bool { return got.Load() > before })
}

// floodWarden is a Warden with the limit notices whose trusted server
// "flood" sends log messages of about size bytes as fast as it can, with
// its events followed. The server is added once the events are followed: a
// flood that began before would be reported before, and never again while
// it lasts.
func floodWarden(t *testing.T, notices upstream.NoticeLimit, size int) (*wardentest.Warden, *wardentest.Events) {
	t.Helper()
	bin := testenv.BuildBinary(t, fixturePkg)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	wardentest.WriteConfig(t, cfg, map[string]any{})
	w := wardentest.StartWith(t, cfg, filepath.Join(dir, "state"), func(o *daemon.Options) { o.Limits.Notices = notices })
	events := w.FollowEvents(t)
	w.Reload(t, func(servers map[string]any) {
		servers["flood"] = map[string]any{"command": bin, "args": []string{"-flood", "-1", "-flood-size", strconv.Itoa(size)}, "trusted": true}
	})
	w.WaitReady(t, "flood")
	return w, events
}

// logClient is a session on /mcp at log level info, calling heard for each
// log message.
func logClient(t *testing.T, w *wardentest.Warden, heard func()) *mcp.ClientSession {
	t.Helper()
	cs := w.Connect(t, "/mcp", &mcp.ClientOptions{LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { heard() }})
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	return cs
}

// stuckClient opens a session at log level info on url and its event
// stream, which it never reads, on a connection whose receive buffer is
// small: what Warden writes fills it in a moment, not after megabytes.
func stuckClient(t testing.TB, url string) {
	small := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	client := &http.Client{Transport: &http.Transport{DialContext: small.DialContext}}
	t.Cleanup(client.CloseIdleConnections)
	logStreamWith(t, client, url)
}

// logStream opens a session at log level info on url, and its event stream.
// The stream is closed at the end of the test.
func logStream(t testing.TB, url string) io.Reader { return logStreamWith(t, http.DefaultClient, url) }

func logStreamWith(t testing.TB, client *http.Client, url string) io.Reader {
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
		resp, err := client.Do(req)
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
