package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/protocol"
)

// Tasks passed through. An upstream that speaks the tasks extension
// itself (it lists protocol.TasksExtension in its server/discover) gets a
// task's call as a task request: told that the client speaks the
// extension, it may answer a task handle of its own, which the caller
// (the surface's task runner) maps to its own task; the client's
// tasks/get, tasks/update and tasks/cancel then come here (TaskRequest)
// with the upstream's id. Only a streamable-HTTP upstream's, on the
// direct path, which keeps the handle as sent (the SDK client's decoding
// drops it); elsewhere Warden runs the task, the upstream called as for a
// direct call.

// The task methods.
const (
	taskGet    = "tasks/get"
	taskUpdate = "tasks/update"
	taskCancel = "tasks/cancel"
)

// TaskParams are the params of a task request sent upstream.
type TaskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// TaskResult is an upstream's answer to a task request, as it sent it.
type TaskResult struct {
	mcp.ResultBase
	Raw json.RawMessage
}

// UnmarshalJSON keeps the answer as it came.
func (r *TaskResult) UnmarshalJSON(b []byte) error {
	r.Raw = bytes.Clone(b)
	return nil
}

// MarshalJSON writes it as it came.
func (r *TaskResult) MarshalJSON() ([]byte, error) { return r.Raw, nil }

// addTaskMethods lets client send the task methods.
func addTaskMethods(client *mcp.Client) {
	for _, m := range []string{taskGet, taskUpdate, taskCancel} {
		_ = mcp.AddSendingCustomMethod[*TaskParams, *TaskResult](client, m)
	}
}

// speaksTasks reports whether the upstream of cs lists the tasks extension.
func speaksTasks(cs *mcp.ClientSession) bool {
	init := cs.InitializeResult()
	return init != nil && init.Capabilities != nil && init.Capabilities.Extensions[protocol.TasksExtension] != nil
}

// passesTask reports whether call, on cs, goes upstream as a task request:
// a task's call, to a stateless-era streamable-HTTP upstream that speaks
// the extension, of a tool whose arguments bind no headers (the direct
// path does not write them).
func (c *Conn) passesTask(cs *mcp.ClientSession, call *Call) bool {
	return call.Task && c.direct != nil && stateless(cs) && speaksTasks(cs) && !c.list.bindsHeaders(call.Params.Name)
}

// TaskRequest sends a task request (tasks/get, tasks/update, tasks/cancel)
// for the upstream's task id, with the input responses of a tasks/update,
// and returns the upstream's answer as it sent it. The upstream's own
// JSON-RPC error is returned as Answer finds it.
func (c *Conn) TaskRequest(ctx context.Context, method, id string, responses map[string]json.RawMessage) (json.RawMessage, error) {
	switch method {
	case taskGet, taskUpdate, taskCancel:
	default:
		return nil, fmt.Errorf("%s is not a task request", method)
	}
	p := &TaskParams{TaskID: id, InputResponses: responses}
	p.Meta = mcp.Meta{mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{protocol.TasksExtension: map[string]any{}}}}
	var res *TaskResult
	err := c.Do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		if !speaksTasks(cs) {
			return fmt.Errorf("server %q no longer speaks the %s extension", c.Name, protocol.TasksExtension)
		}
		var err error
		res, err = mcp.CallCustomMethod[*TaskParams, *TaskResult](WithCall(ctx, nil), cs, method, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res.Raw, nil
}

// nameTask is req, a task request, with its Mcp-Name header: the task's
// id, as the extension wants (the SDK's client names only tools, prompts
// and resources). req itself is left as it is, as a RoundTripper must.
func nameTask(req *http.Request, body []byte) *http.Request {
	var m struct {
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if req.Header.Get("Mcp-Name") != "" || json.Unmarshal(body, &m) != nil || m.Params.TaskID == "" {
		return req
	}
	named := req.Clone(req.Context())
	named.Header.Set("Mcp-Name", m.Params.TaskID)
	return named
}
