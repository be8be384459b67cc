package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

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
