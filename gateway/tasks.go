package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/wardenmcp/warden/upstream"
	"github.com/wardenmcp/warden/writes"
)

// TaskOutcomeUnknown latches server for the non-read call of tool run as
// task id, whose outcome Warden cannot learn: its instance died while it
// ran, or the upstream that ran it as its own task was told to cancel it
// or no longer knows it. A latch of the same call (its write intent's, at
// a start) is not made twice.
func (g *Gateway) TaskOutcomeUnknown(server, tool, argsSHA256, id string, reason writes.Reason) error {
	for _, l := range g.deps.Writes.List() {
		if l.Server == server && l.Tool == tool && l.ArgsSHA256 == argsSHA256 {
			return nil
		}
	}
	return g.deps.Writes.Record(writes.Latch{Server: server, Tool: tool, ArgsSHA256: argsSHA256,
		At: time.Now(), Reason: reason, Surface: "task " + id}, nil)
}

// TaskFinished reports whether server, which runs task id as its own,
// says it completed or failed.
func (g *Gateway) TaskFinished(ctx context.Context, server, id string) bool {
	raw, err := g.TaskRequest(ctx, server, "tasks/get", id, nil)
	var t struct{ Status string }
	if err != nil || json.Unmarshal(raw, &t) != nil {
		return false
	}
	return t.Status == "completed" || t.Status == "failed"
}

// TaskRequest forwards a task request (tasks/get, tasks/update,
// tasks/cancel) to server, which speaks the tasks extension and runs the
// task under its own id, and returns its answer as it sent it. The
// surface has checked that the task is its caller's: the request goes as
// the call that started the task went, with no policy of its own. The
// upstream's JSON-RPC error is returned as it said it; one that could not
// be reached is an internal error saying so.
func (g *Gateway) TaskRequest(ctx context.Context, server, method, id string, responses map[string]json.RawMessage) (json.RawMessage, error) {
	c, err := g.conns.live(server)
	if err == nil {
		var raw json.RawMessage
		if raw, err = c.TaskRequest(ctx, method, id, responses); err == nil {
			return raw, nil
		}
	}
	if a := upstream.Answer(err); a != nil {
		return nil, a
	}
	var ref *Refusal
	if errors.As(err, &ref) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ref.Text}
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("server %q, which runs this task, could not be reached for %s; try again, and check the server with: warden status. The cause: %v", server, method, err)}
}
