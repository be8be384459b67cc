package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// floodSession opens a client session on url and initializes it, as a
// flood does: nothing after that. It returns the HTTP status of the
// initialize.
func floodSession(c *http.Client, url string, n int) (int, error) {
	post := func(body, session string) (*http.Response, error) {
		req, err := http.NewRequest("POST", url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := c.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	resp, err := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood-%d","version":"1"}}}`, n), "")
	if err != nil || resp.StatusCode != http.StatusOK {
		return statusOr(resp), err
	}
	_, err = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, resp.Header.Get("Mcp-Session-Id"))
	return resp.StatusCode, err
}

func statusOr(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// The session flood of issue 28: one local process opens more client
// sessions than the limit (1,000) as fast as it can and does nothing with
// them. A session that did real work before the flood still works after it,
// and a new SDK client still connects and calls a tool: sessions that did
// no work make room for new ones, born first, first. Before, every session
// beyond the flood was refused (503) for up to an hour.
func TestSessionFloodLeavesRoom(t *testing.T) {
	fx := testenv.BuildBinary(t, fixturePkg)
	p := wardentest.ServeProcess(t, "", map[string]any{"up": map[string]any{"command": fx, "trusted": true}})
	wardentest.WaitFor(t, 20*time.Second, "up ready", func() bool { return serverState(statusOf(t, p), "up") == "ready" })
	url := "http://" + p.Addr + "/mcp"

	worker := wardentest.ConnectURL(t, url, nil, nil)
	wardentest.CallText(t, worker, "up__echo", map[string]any{"before": "flood"})

	const flood = 1200
	var (
		next    atomic.Int64
		refused atomic.Int64
		failed  atomic.Value
		wg      sync.WaitGroup
	)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	for range 16 {
		wg.Go(func() {
			for n := next.Add(1); n <= flood; n = next.Add(1) {
				code, err := floodSession(c, url, int(n))
				if err != nil {
					failed.Store(err)
					return
				}
				if code == http.StatusServiceUnavailable {
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("flooding: %v", err)
	}
	t.Logf("%d sessions opened by the flood, %d refused", flood-refused.Load(), refused.Load())

	fresh := mcp.NewClient(&mcp.Implementation{Name: "after-flood", Version: "1"}, nil)
	cs, err := fresh.Connect(ctxT(t, 20*time.Second), &mcp.StreamableClientTransport{Endpoint: url}, wardentest.Session2025)
	if err != nil {
		t.Fatalf("a new client after a flood of %d sessions: %v", flood, err)
	}
	defer cs.Close()
	if got := wardentest.CallText(t, cs, "up__echo", map[string]any{"n": 1}); got != `{"n":1}` {
		t.Fatalf("the new client's call answered %q", got)
	}
	if got := wardentest.CallText(t, worker, "up__echo", map[string]any{"n": 2}); got != `{"n":2}` {
		t.Fatalf("the session that worked before the flood answered %q", got)
	}
}
