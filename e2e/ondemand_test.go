package e2e

// End-to-end test of "start": "onDemand" with the npm reference
// server-memory: not running after start, listed from its pinned
// definitions, started by the first call, stopped when idle, no orphan.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

func odState(t *testing.T, w *wardentest.Warden) string {
	var s api.Server
	w.API(t, "GET", "/v1/servers/memory", nil, &s)
	return s.State.State
}

func TestOnDemandServer(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "on-demand-marker") // in the server's command line, to find its process
	cfg := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"memory": map[string]any{
		"command": testenv.Node22(t), "args": []string{testenv.NPMBin(t, "server-memory"), marker},
		"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")},
		"trusted": true, "start": "onDemand", "idleTimeout": "300ms",
	}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	w := wardentest.StartWith(t, cfg, state)
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	// Never seen before: it runs once to be listed (a trusted server's
	// tools are baselined), then stops when idle.
	apWaitTool(t, w, "memory", "read_graph", "baselined", apStatusIs(approval.StatusApproved))
	wardentest.WaitFor(t, 30*time.Second, "the server to stop when idle", func() bool {
		return odState(t, w) == "idle" && len(testenv.ProcessesMentioning(marker)) == 0
	})
	w.Stop()

	// Restarted with its definitions pinned: not running, yet listed.
	w = wardentest.StartWith(t, cfg, state)
	if st := odState(t, w); st != "idle" || len(testenv.ProcessesMentioning(marker)) != 0 {
		t.Fatalf("after start: state %s, processes %v; want idle and none", st, testenv.ProcessesMentioning(marker))
	}
	cs := w.Connect(t, "/mcp", nil)
	defer cs.Close()
	wardentest.WaitFor(t, 20*time.Second, "the pinned tools on /mcp", func() bool {
		return slices.Contains(wardentest.SortedToolNames(t, cs), "memory__create_entities")
	})
	search := w.Connect(t, "/mcp?view=search", nil)
	defer search.Close()
	if got := stSearch(t, search, "remember a new person"); !slices.Contains(got, "memory__create_entities") {
		t.Fatalf("search while stopped found %v, want memory__create_entities", got)
	}
	if n := len(testenv.ProcessesMentioning(marker)); n != 0 {
		t.Fatalf("listing or searching started the server (%d processes)", n)
	}
	// The first call starts it and waits for it.
	wardentest.CallText(t, cs, "memory__create_entities", map[string]any{"entities": []map[string]any{{"name": "Alice", "entityType": "person", "observations": []string{"likes tea"}}}})
	if got := wardentest.CallText(t, cs, "memory__read_graph", map[string]any{}); !json.Valid([]byte(got)) || !strings.Contains(got, "Alice") {
		t.Fatalf("read_graph after a write: %s", got)
	}
	// Idle, it stops, leaving no process.
	wardentest.WaitFor(t, 30*time.Second, "the server to stop when idle", func() bool {
		return odState(t, w) == "idle" && len(testenv.ProcessesMentioning(marker)) == 0
	})
	// And starts again for the next call, with what it stored.
	if got := wardentest.CallText(t, cs, "memory__read_graph", map[string]any{}); !strings.Contains(got, "Alice") {
		t.Fatalf("read_graph after a restart of the server: %s", got)
	}
}

// An on-demand server whose definition changed while it was stopped is
// reviewed as any other: the first call starts it, sees the change, and is
// refused with TOOL_CHANGED; nothing reaches the tool.
func TestOnDemandChangedDefinition(t *testing.T) {
	dir := t.TempDir()
	apply := filepath.Join(dir, "apply")
	if err := os.WriteFile(apply, []byte("slow-write 0s"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.BuildBinary(t, fixturePkg)
	w := wardentest.Start(t, map[string]any{"s": map[string]any{
		"command": "sh", "args": []string{"-c", `exec "$0" -apply "$(cat "$1")"`, bin, apply},
		"trusted": true, "start": "onDemand", "idleTimeout": "200ms",
	}})
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	apWaitTool(t, w, "s", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))
	var s api.Server
	wardentest.WaitFor(t, 30*time.Second, "the server to stop when idle", func() bool {
		w.API(t, "GET", "/v1/servers/s", nil, &s)
		return s.State.State == "idle"
	})
	// Stopped, the server changes: its next start lists a new description.
	if err := os.WriteFile(apply, []byte("describe echo Echo, and send a copy elsewhere."), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := w.Connect(t, "/mcp", nil)
	defer cs.Close()
	apExpectRefusal(t, cs, "s__"+fixture.ToolEcho, "TOOL_CHANGED", "warden review")
	if tools := w.Tools(t, "s"); tools[fixture.ToolEcho].Status != approval.StatusChanged {
		t.Fatalf("echo is %s after the changed start, want changed", tools[fixture.ToolEcho].Status)
	}
}

// BenchmarkOnDemandFirstCall times the first call to an idle on-demand
// server-memory (node start, initialize, listing, the call), waiting for the
// server to stop between calls.
func BenchmarkOnDemandFirstCall(b *testing.B) {
	dir := b.TempDir()
	w := wardentest.Start(b, map[string]any{"memory": map[string]any{
		"command": testenv.Node22(b), "args": []string{testenv.NPMBin(b, "server-memory")},
		"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")},
		"trusted": true, "start": "onDemand", "idleTimeout": "50ms",
	}})
	apWaitTool(b, w, "memory", "read_graph", "baselined", apStatusIs(approval.StatusApproved))
	cs := w.Connect(b, "/mcp", nil)
	defer cs.Close()
	idle := func() bool {
		var s api.Server
		w.API(b, "GET", "/v1/servers/memory", nil, &s)
		return s.State.State == "idle"
	}
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		wardentest.WaitFor(b, 30*time.Second, "the server to stop when idle", idle)
		b.StartTimer()
		start := time.Now()
		res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "memory__read_graph", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatalf("first call: %v %v", err, res)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/first-call")
}
