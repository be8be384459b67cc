package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

const fixturePkg = "./internal/testing/fixture/cmd/fixture-server"

// httpFixture starts a fixture-server process serving HTTP, with args
// (-stats is its own), and returns its URL, its process and its -stats
// file.
func httpFixture(t testing.TB, args ...string) (url string, proc *testenv.Process, stats string) {
	t.Helper()
	stats = filepath.Join(t.TempDir(), "stats.json")
	proc = testenv.StartProcess(t, exec.Command(testenv.BuildBinary(t, fixturePkg), append([]string{"-http", "127.0.0.1:0", "-stats", stats}, args...)...))
	wardentest.WaitFor(t, 20*time.Second, "the HTTP fixture-server to listen", func() bool {
		st, ok := fixture.ReadStatsFile(stats)
		url = st.URL
		return ok && url != ""
	})
	return url, proc, stats
}

// readPID reads the pid a fixture-server wrote into its -stats file.
func readPID(t *testing.T, statsFile string) int {
	t.Helper()
	var pid int
	wardentest.WaitFor(t, 20*time.Second, "fixture stats file", func() bool {
		s, ok := fixture.ReadStatsFile(statsFile)
		pid = s.PID
		return ok && pid != 0
	})
	return pid
}

func itoa(n int) string { return strconv.Itoa(n) }

// A stdio upstream killed mid-session is reconnected, and the other server
// keeps answering meanwhile.
func TestKilledStdioUpstreamReconnects(t *testing.T) {
	stats := filepath.Join(t.TempDir(), "stats.json")
	other := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"local":  map[string]any{"command": testenv.BuildBinary(t, fixturePkg), "args": []string{"-stats", stats}, "trusted": true},
		"remote": map[string]any{"url": other.Serve(t), "trusted": true},
	})
	w.WaitReady(t, "local")
	w.WaitReady(t, "remote")
	cs := w.Connect(t, "/mcp", nil)
	wardentest.CallText(t, cs, "local__echo", map[string]any{"x": 1})

	pid := readPID(t, stats)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The other server answers while local is down or reconnecting.
	wardentest.CallText(t, cs, "remote__echo", map[string]any{"during": "outage"})
	wardentest.WaitFor(t, 30*time.Second, "local to reconnect with a new process", func() bool {
		c, _ := w.D.Gateway().Upstream("local")
		return c.Connection().State == "ready" && c.Connection().Reconnects >= 1
	})
	if got := wardentest.CallText(t, cs, "local__echo", map[string]any{"after": "restart"}); !strings.Contains(got, "restart") {
		t.Fatalf("echo after reconnect = %q", got)
	}
	if newPID := readPID(t, stats); newPID == pid {
		t.Fatalf("expected a new upstream process, still pid %d", pid)
	}
}

// A hanging call fails at callTimeout with a clear error (a read, so no
// latch is involved).
func TestHangingCallFailsAtCallTimeout(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"slow": map[string]any{"url": up.Serve(t), "trusted": true, "callTimeout": "300ms"},
	})
	w.WaitReady(t, "slow")
	cs := w.Connect(t, "/mcp/slow", nil)
	start := time.Now()
	res := wardentest.CallResult(t, cs, "read_value", map[string]any{"key": "k", "sleep_ms": 20000})
	if !res.IsError || !strings.Contains(wardentest.ResultText(res), "timed out after 300ms") || !strings.Contains(wardentest.ResultText(res), "callTimeout") {
		t.Fatalf("want an error naming the 300ms callTimeout, got isError=%v %q", res.IsError, wardentest.ResultText(res))
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("call was not cut at callTimeout: took %s", time.Since(start))
	}
}

// An upstream that prints garbage fails clearly and is retried with backoff.
func TestGarbageUpstreamRetriedWithBackoff(t *testing.T) {
	start := time.Now()
	w := wardentest.Start(t, map[string]any{
		"junk": map[string]any{"command": testenv.BuildBinary(t, fixturePkg), "args": []string{"-garbage"}, "callTimeout": "2s"},
	})
	var st struct {
		Connection struct {
			State    string
			Error    string
			Failures int
		}
	}
	wardentest.WaitFor(t, 30*time.Second, "two failed attempts", func() bool {
		w.API(t, "GET", "/v1/servers/junk", nil, &st)
		return st.Connection.Failures >= 2
	})
	// Attempt k comes at least 100ms·(2^(k-1)-1) after the first (each
	// delay is at least half of 200ms doubled per failure): a retry loop
	// without backoff makes many more. A sleep: the window attempts are
	// counted in.
	time.Sleep(time.Second)
	w.API(t, "GET", "/v1/servers/junk", nil, &st)
	bound := 1 + int(math.Log2(float64(time.Since(start))/float64(100*time.Millisecond)+1))
	if st.Connection.Failures > bound {
		t.Fatalf("%d failed attempts in %s, want at most %d with backoff", st.Connection.Failures, time.Since(start).Round(time.Millisecond), bound)
	}
	if st.Connection.State != "backoff" && st.Connection.State != "connecting" {
		t.Fatalf("state = %q, want backoff or connecting", st.Connection.State)
	}
	if !strings.Contains(st.Connection.Error, "initialize") {
		t.Fatalf("error should say the initialize failed, got %q", st.Connection.Error)
	}
	cs := w.Connect(t, "/mcp/junk", nil)
	res := wardentest.CallResult(t, cs, "echo", map[string]any{})
	if !res.IsError {
		t.Fatalf("a call to a broken upstream must fail, got %q", wardentest.ResultText(res))
	}
}

// After `kill -9` of Warden no stdio server is left running, grandchildren
// (a launcher's child) included.
func TestNoOrphansAfterKill9(t *testing.T) {
	dir := t.TempDir()
	stats := filepath.Join(t.TempDir(), "stats.json")
	cfg := filepath.Join(dir, "config.json")
	port := testenv.FreePort(t)
	fixtureBin := testenv.BuildBinary(t, fixturePkg)
	b, _ := json.Marshal(map[string]any{
		"listen": "127.0.0.1:" + itoa(port),
		"mcpServers": map[string]any{
			// sh stays the direct child and the fixture is its child, like npx → node.
			"launched": map[string]any{"command": "sh", "args": []string{"-c", fixtureBin + " -stats " + stats + "; exit 0"}, "cwd": filepath.Dir(stats)},
		},
	})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	warden := testenv.StartProcess(t, exec.Command(testenv.BuildBinary(t, "./cmd/warden"), "serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state")))
	readPID(t, stats) // the fixture runs (its PID is its namespace's: find it by its command line)
	if len(testenv.ProcessesMentioning(stats)) != 2 {
		t.Fatalf("want sh and the fixture running, got pids %v", testenv.ProcessesMentioning(stats))
	}
	if err := warden.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wardentest.WaitFor(t, 10*time.Second, "the stdio server's process tree to die with warden", func() bool {
		return len(testenv.ProcessesMentioning(stats)) == 0
	})
}

// A server's calls in flight are bounded (32 by default): the rest wait
// their turn, and the saturated server holds up no other server.
func TestConcurrencyBoundedPerServer(t *testing.T) {
	busy := fixture.NewServer(fixture.Options{})
	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{})
	var releaseOnce sync.Once
	busy.Server.AddTool(&mcp.Tool{Name: "hold", InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			defer func() {
				mu.Lock()
				inFlight--
				mu.Unlock()
			}()
			select {
			case <-release:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	other := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"busy":  map[string]any{"url": busy.Serve(t), "trusted": true, "callTimeout": "60s"},
		"other": map[string]any{"url": other.Serve(t), "trusted": true},
	})
	w.WaitReady(t, "busy")
	w.WaitReady(t, "other")
	cs := w.Connect(t, "/mcp", nil)
	waitTool(t, cs, "busy__hold")
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // before the servers stop

	const calls = 40
	errs := make(chan error, calls)
	for range calls {
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "busy__hold"})
			if err == nil && (res.IsError || wardentest.ResultText(res) != "released") {
				err = fmt.Errorf("answer %q (isError %v)", wardentest.ResultText(res), res.IsError)
			}
			errs <- err
		}()
	}
	wardentest.WaitFor(t, 20*time.Second, "32 calls in flight upstream", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return inFlight >= 32
	})
	// The other server answers meanwhile.
	wardentest.CallText(t, cs, "other__echo", map[string]any{"while": "busy"})
	time.Sleep(300 * time.Millisecond) // long enough for a 33rd call to arrive, were it let through
	mu.Lock()
	got := most
	mu.Unlock()
	if got != 32 {
		t.Fatalf("at most %d calls were in flight upstream at once, want 32", got)
	}
	releaseOnce.Do(func() { close(release) })
	for range calls {
		if err := <-errs; err != nil {
			t.Fatalf("a held call: %v", err)
		}
	}
}

// A request body over 4 MiB is refused with 413, on a session's fast path
// and before one exists, and nothing reaches the upstream; the session
// goes on working.
func TestRequestSizeBounded(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": up.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")
	cs := w.Connect(t, "/mcp/s", nil)
	wardentest.CallText(t, cs, "echo", map[string]any{"small": true})
	before := up.Calls("echo")

	big := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"blob":"` +
		strings.Repeat("x", 5<<20) + `"}}}`
	for _, session := range []string{cs.ID(), ""} {
		req, err := http.NewRequest("POST", w.URL("/mcp/s"), strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("session %q: %v", session, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("session %q: a 5 MiB body got %s, want 413", session, resp.Status)
		}
	}
	if n := up.Calls("echo"); n != before {
		t.Fatalf("the upstream saw %d echo calls after the refused ones, want none", n-before)
	}
	wardentest.CallText(t, cs, "echo", map[string]any{"after": "refusal"})
}
