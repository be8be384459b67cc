package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/wardenmcp/warden/upstream"
)

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
