package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
	"github.com/wardenmcp/warden/writes"
)

// A Warden that ran alone moves to PostgreSQL with `warden store migrate`
// and, started on it, holds what it held: its approvals and blocks, a
// write in doubt, its activity and its operators' decisions.
func TestMoveInToPostgres(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	servers := map[string]any{"fx": map[string]any{"url": fx.Serve(t)}} // untrusted
	alone := wardentest.Start(t, servers)
	wardentest.WaitFor(t, 30*time.Second, "fx listed", func() bool { return len(alone.Tools(t, "fx")) > 0 })
	if code := alone.API(t, "POST", "/v1/servers/fx/approve", map[string]any{}, nil); code != http.StatusOK {
		t.Fatalf("approving fx: %d", code)
	}
	if code := alone.API(t, "POST", "/v1/servers/fx/tools/block", map[string]any{"tools": []string{fixture.ToolEcho}}, nil); code != http.StatusOK {
		t.Fatalf("blocking echo: %d", code)
	}
	cs := alone.Connect(t, "/mcp/fx", nil)
	wardentest.CallText(t, cs, fixture.ToolRead, map[string]any{})
	ctx, cancel := context.WithCancel(context.Background())
	before := fx.WriteDispatches()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: map[string]any{"value": "x", "sleep_ms": 3000}})
	}()
	wardentest.WaitFor(t, 10*time.Second, "the write sent upstream", func() bool { return fx.WriteDispatches() > before })
	cancel() // its outcome is unknown: fx is latched
	<-done
	wardentest.WaitFor(t, 10*time.Second, "fx latched, both calls in the activity log", func() bool {
		var latches []writes.Latch
		var entries []activity.Entry
		alone.API(t, "GET", "/v1/writes", nil, &latches)
		alone.API(t, "GET", "/v1/activity", nil, &entries)
		return len(latches) == 1 && len(entries) == 2
	})
	want := moveInState(t, alone)
	alone.Stop()

	url := pgtest.Start(t, pgtest.Options{}).URL()
	const key = "a store key for the move-in test"
	wardentest.EditConfigFile(t, alone.ConfigPath, func(cfg map[string]any) { cfg["storeKey"] = key })
	for i, copied := range []string{"copied ", "copied 0 records"} { // the second run writes nothing
		code, out, errOut := alone.CLI(t, "store", "migrate", "--to", url)
		if code != 0 || !strings.Contains(out, copied) || !strings.Contains(out, "the copy matches") {
			t.Fatalf("migrate, run %d: %d\n%s%s", i+1, code, out, errOut)
		}
	}

	wardentest.EditConfigFile(t, alone.ConfigPath, func(cfg map[string]any) { cfg["store"] = url })
	moved := wardentest.StartWith(t, alone.ConfigPath, t.TempDir())
	wardentest.WaitFor(t, 30*time.Second, "fx listed from PostgreSQL", func() bool { return len(moved.Tools(t, "fx")) > 0 })
	if got := moveInState(t, moved); got.String() != want.String() {
		t.Fatalf("on PostgreSQL:\n%s\nwant what the embedded store held:\n%s", got, want)
	}
	res := wardentest.CallResult(t, moved.Connect(t, "/mcp/fx", nil), fixture.ToolWrite, map[string]any{"value": "y"})
	wardentest.WantRefusal(t, res, "WRITES_LATCHED")
}

// movedState is what a move to PostgreSQL must keep, in a form to compare.
type movedState struct {
	tools     []string // name=status
	latches   []string // server/reason
	activity  []string // server/tool/outcome
	decisions []string // action server
}

func (s movedState) String() string {
	return strings.Join([]string{
		"tools: " + strings.Join(s.tools, " "), "latches: " + strings.Join(s.latches, " "),
		"activity: " + strings.Join(s.activity, " "), "decisions: " + strings.Join(s.decisions, " "),
	}, "\n")
}

func moveInState(t *testing.T, w *wardentest.Warden) movedState {
	t.Helper()
	var s movedState
	for name, tl := range w.Tools(t, "fx") {
		s.tools = append(s.tools, name+"="+string(tl.Status))
	}
	slices.Sort(s.tools)
	var latches []writes.Latch
	w.API(t, "GET", "/v1/writes", nil, &latches)
	for _, l := range latches {
		s.latches = append(s.latches, l.Server+"/"+string(l.Reason))
	}
	var entries []activity.Entry
	w.API(t, "GET", "/v1/activity", nil, &entries)
	for _, e := range entries {
		s.activity = append(s.activity, e.Server+"/"+e.Tool+"/"+e.Outcome)
	}
	var ds []decisions.Decision
	w.API(t, "GET", "/v1/decisions", nil, &ds)
	for _, d := range ds {
		s.decisions = append(s.decisions, d.Action+" "+d.Server)
	}
	if len(s.tools) == 0 || len(s.latches) == 0 || len(s.activity) == 0 || len(s.decisions) == 0 {
		t.Fatalf("a part of the state is empty, so its move would not be checked:\n%s", s)
	}
	return s
}
