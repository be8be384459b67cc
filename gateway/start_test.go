package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/writes"
)

// A task's Start is called once its call is admitted, before it goes
// upstream: not for a call refused by policy; an error from it refuses the
// call with nothing sent. The activity log records a started call as a
// task.
func TestCallStart(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)))
	p.WaitListed(t, "fx")
	run := func(tool, args string, startErr error) (started bool, calls int64, err error) {
		before := fx.Calls(tool)
		_, err = p.Gateway.CallTool(testCtx(t), gateway.Call{Server: "fx", Tool: tool, Args: []byte(args), Surface: "mcp",
			Start: func(context.Context) error {
				started = true
				if fx.Calls(tool) != before {
					t.Errorf("%s: Start called after the call went upstream", tool)
				}
				return startErr
			}})
		return started, fx.Calls(tool) - before, err
	}

	if started, calls, err := run(fixture.ToolEcho, `{}`, nil); !started || calls != 1 || err != nil {
		t.Fatalf("an admitted call: started %v, %d calls upstream, %v", started, calls, err)
	}
	if e := lastActivity(t, p, "fx"); !e.Task || e.Outcome != "ok" {
		t.Errorf("activity %+v: want an ok task", e)
	}

	full := errors.New("too many tasks")
	if started, calls, err := run(fixture.ToolWrite, `{"value":"v"}`, full); !started || calls != 0 || !errors.Is(err, full) {
		t.Fatalf("a call Start refused: started %v, %d calls upstream, %v", started, calls, err)
	}
	if fx.WriteDispatches() != 0 || len(p.Writes.List()) != 0 {
		t.Errorf("a write Start refused was sent (%d) or latched (%v)", fx.WriteDispatches(), p.Writes.List())
	}

	if err := p.Writes.Record(writes.Latch{Server: "fx", Tool: fixture.ToolWrite, Reason: writes.ReasonTimeout}, nil); err != nil {
		t.Fatal(err)
	}
	if started, calls, _ := run(fixture.ToolWrite, `{"value":"v"}`, nil); started || calls != 0 {
		t.Errorf("a write refused by the latch: started %v, %d calls upstream", started, calls)
	}
}

// A destructive task on a server with confirmDestructive is started before
// its confirmation, which is asked through it (a task's client is asked in
// the task); declined, nothing is sent.
func TestCallStartBeforeConfirmation(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"d": {"url": %q, "trusted": true, "confirmDestructive": true}}`, fx.Serve(t)))
	p.WaitListed(t, "d")
	started := false
	asker := &client{caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		elicit: func(*mcp.ElicitParams) (*mcp.ElicitResult, error) {
			if !started {
				t.Error("the confirmation was asked before the task was started")
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		}}
	res, err := p.Gateway.CallTool(testCtx(t), gateway.Call{Server: "d", Tool: fixture.ToolDelete, Surface: "mcp", Client: asker,
		Start: func(context.Context) error { started = true; return nil }})
	if err != nil || refusalCode(decoded(t, res)) != string(gateway.CodeDeclined) || asker.askedCount() != 1 || fx.Deletes() != 0 {
		t.Fatalf("a declined destructive task: %v (%v), asked %d times, %d deletes", res, err, asker.askedCount(), fx.Deletes())
	}
}

// A tool's task support is part of its pinned definition: how it runs as
// a task follows it, and a change of it holds the tool for review.
func TestTaskSupportIsPinned(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{Tasks: true})
	p := start(t, fmt.Sprintf(`{"tk": {"url": %q, "trusted": true, "tasks": [%q]}}`, fx.Serve(t), fixture.ToolGreet))
	p.WaitListed(t, "tk")
	for tool, want := range map[string]string{
		fixture.ToolSlowCompute: gateway.TaskOptional, fixture.ToolWithTask: gateway.TaskRequired,
		fixture.ToolGreet: gateway.TaskOptional, // forbidden by its definition, named in "tasks"
		fixture.ToolEcho:  gateway.TaskForbidden,
	} {
		if got := p.Gateway.TaskSupport("tk", tool); got != want {
			t.Errorf("%s: task support %q, want %q", tool, got, want)
		}
	}
	if err := fx.SetTaskSupport(fixture.ToolSlowCompute, fixture.TaskRequired); err != nil {
		t.Fatal(err)
	}
	waitTool(t, p, "tk", fixture.ToolSlowCompute, func(x gateway.Tool) bool { return x.Status == approval.StatusChanged })
	expectRefusal(t, p, "tk", fixture.ToolSlowCompute, `{}`, nil, gateway.CodeChanged, "warden review approve tk slow_compute")
}
