package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// memoryServer is the npm reference server-memory over stdio, run with Node 22.
func memoryServer(t *testing.T) map[string]any {
	return map[string]any{
		"command": testenv.Node22(t),
		"args":    []string{testenv.NPMBin(t, "server-memory")},
		"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")},
		"trusted": true,
	}
}

// The aggregated endpoint shows both servers' tools, prefixed, and routes
// calls to the right one; a memory write is read back. The same through
// `warden stdio`.
func TestAggregatedRealServers(t *testing.T) {
	w := wardentest.Start(t, map[string]any{
		"everything": map[string]any{"url": testenv.StartEverythingServer(t), "trusted": true},
		"memory":     memoryServer(t),
	})
	w.WaitReady(t, "everything")
	w.WaitReady(t, "memory")

	check := func(t *testing.T, cs *mcp.ClientSession) {
		// The lists follow the servers' connections a moment later.
		var names []string
		wardentest.WaitFor(t, 10*time.Second, "both servers' tools listed", func() bool {
			names = wardentest.ToolNames(t, cs)
			return slices.Contains(names, "everything__test_simple_text") && slices.Contains(names, "memory__create_entities") &&
				slices.Contains(names, "memory__read_graph")
		})
		if got := wardentest.CallText(t, cs, "everything__test_simple_text", map[string]any{}); !strings.Contains(got, "This is a simple text response") {
			t.Fatalf("everything answered %q", got)
		}
		marker := "warden-e2e-" + strings.ReplaceAll(t.Name(), "/", "-")
		wardentest.CallText(t, cs, "memory__create_entities", map[string]any{"entities": []any{
			map[string]any{"name": marker, "entityType": "test", "observations": []string{"written through warden"}},
		}})
		graph := wardentest.CallText(t, cs, "memory__read_graph", map[string]any{})
		var g struct {
			Entities []struct{ Name string } `json:"entities"`
		}
		if err := json.Unmarshal([]byte(graph), &g); err != nil {
			t.Fatalf("read_graph answer: %v: %s", err, graph)
		}
		if !slices.ContainsFunc(g.Entities, func(e struct{ Name string }) bool { return e.Name == marker }) {
			t.Fatalf("entity %s not read back: %s", marker, graph)
		}
	}

	t.Run("http", func(t *testing.T) { check(t, w.Connect(t, "/mcp", nil)) })
	t.Run("warden stdio", func(t *testing.T) {
		bin := testenv.BuildBinary(t, "./cmd/warden")
		cmd := exec.Command(bin, "stdio", "--config", w.ConfigPath)
		cmd.Env = append(cmd.Environ(), "WARDEN_STATE_DIR="+w.StateDir)
		c := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("connect through warden stdio: %v", err)
		}
		defer cs.Close()
		check(t, cs)
	})
}
