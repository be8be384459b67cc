package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/fixture"
	"github.com/wardenmcp/warden/internal/testenv"
	"github.com/wardenmcp/warden/internal/wardentest"
)

const fixturePkg = "./internal/fixture/cmd/fixture-server"

// readPID reads the pid a fixture-server wrote into its -stats file.
func readPID(t *testing.T, statsFile string) int {
	t.Helper()
	var pid int
	wardentest.WaitFor(t, 20*time.Second, "fixture stats file", func() bool {
		b, err := os.ReadFile(statsFile)
		if err != nil {
			return false
		}
		var s struct{ PID int }
		if json.Unmarshal(b, &s) != nil || s.PID == 0 {
			return false
		}
		pid = s.PID
		return true
	})
	return pid
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	// A zombie is dead for our purposes.
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

func itoa(n int) string { return strconv.Itoa(n) }

func callResult(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

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
	callText(t, cs, "local__echo", map[string]any{"x": 1})

	pid := readPID(t, stats)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The other server answers while local is down or reconnecting.
	callText(t, cs, "remote__echo", map[string]any{"during": "outage"})
	wardentest.WaitFor(t, 30*time.Second, "local to reconnect with a new process", func() bool {
		c, _ := w.D.Gateway().Conn("local")
		return c.Status().State == "ready" && c.Status().Reconnects >= 1
	})
	if got := callText(t, cs, "local__echo", map[string]any{"after": "restart"}); !strings.Contains(got, "restart") {
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
	res := callResult(t, cs, "read_value", map[string]any{"key": "k", "sleep_ms": 20000})
	if !res.IsError || !strings.Contains(resultText(res), "timed out after 300ms") || !strings.Contains(resultText(res), "callTimeout") {
		t.Fatalf("want an error naming the 300ms callTimeout, got isError=%v %q", res.IsError, resultText(res))
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("call was not cut at callTimeout: took %s", time.Since(start))
	}
}

// An upstream that prints garbage fails clearly and is retried with backoff.
func TestGarbageUpstreamRetriedWithBackoff(t *testing.T) {
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
	if st.Connection.State != "backoff" && st.Connection.State != "connecting" {
		t.Fatalf("state = %q, want backoff or connecting", st.Connection.State)
	}
	if !strings.Contains(st.Connection.Error, "initialize") {
		t.Fatalf("error should say the initialize failed, got %q", st.Connection.Error)
	}
	cs := w.Connect(t, "/mcp/junk", nil)
	res := callResult(t, cs, "echo", map[string]any{})
	if !res.IsError {
		t.Fatalf("a call to a broken upstream must fail, got %q", resultText(res))
	}
}

// After `kill -9` of Warden no stdio server is left running, grandchildren
// (a launcher's child) included.
func TestNoOrphansAfterKill9(t *testing.T) {
	dir := t.TempDir()
	stats := filepath.Join(dir, "stats.json")
	cfg := filepath.Join(dir, "config.json")
	port := testenv.FreePort(t)
	fixtureBin := testenv.BuildBinary(t, fixturePkg)
	b, _ := json.Marshal(map[string]any{
		"listen": "127.0.0.1:" + itoa(port),
		"mcpServers": map[string]any{
			// sh stays the direct child and the fixture is its child, like npx → node.
			"launched": map[string]any{"command": "sh", "args": []string{"-c", fixtureBin + " -stats " + stats + "; exit 0"}},
		},
	})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	warden := testenv.StartProcess(t, exec.Command(testenv.BuildBinary(t, "./cmd/warden"), "serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state")))
	pid := readPID(t, stats)
	if !alive(pid) {
		t.Fatal("fixture not running")
	}
	if err := warden.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wardentest.WaitFor(t, 10*time.Second, "the stdio server's process tree to die with warden", func() bool {
		return !alive(pid) && len(processesMentioning(stats)) == 0
	})
}

// processesMentioning lists live pids whose command line contains s.
func processesMentioning(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := atoi(e.Name())
		if pid <= 0 {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), s) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}
