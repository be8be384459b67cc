package surface

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/protocol"
	"github.com/wardenmcp/warden/question"
	"github.com/wardenmcp/warden/tasks"
	"github.com/wardenmcp/warden/writes"
)

// Tasks (the 2026-07-28 tasks extension, wire in package tasks' doc) on
// /mcp, /mcp/{server} and the search view (its call_tool), for any
// upstream: Warden runs the task itself, or passes it through to an
// upstream that speaks the extension (passTask). A
// stateless-era client that declares the extension and calls a tool that
// runs as a task (gateway.TaskSupport) gets a task handle once the call is
// admitted by the same call path and policy as a direct call; the call
// goes on upstream on a goroutine of its own, its questions parked in the
// task for tasks/get and tasks/update, its outcome settled into the task.
// The SDK server's path serves every task request: the fast path hands
// them over (taskable).

// tasksExtension is the extension's name, under capabilities.extensions.
const tasksExtension = protocol.TasksExtension

// The task methods the extension defines.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
)

// questionWait bounds how long a task waits for its client's answer to a
// question (tasks/update): then the question fails, and with it the call.
const questionWait = roundWait

// declaresTasks reports whether caps declare the tasks extension.
func declaresTasks(caps *mcp.ClientCapabilities) bool {
	return caps != nil && caps.Extensions[tasksExtension] != nil
}

// tasksMissing is the error for a request that needs the tasks extension
// from a client that did not declare it.
func tasksMissing(what string) error {
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{
		Extensions: map[string]any{tasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: what + " needs the " + tasksExtension + " extension: declare it under _meta[\"" + mcp.MetaKeyClientCapabilities + "\"].extensions"}
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// taskResult is every answer of the extension: a CreateTaskResult
// (resultType "task"), a DetailedTask (tasks/get) or an acknowledgement
// (tasks/update, tasks/cancel: resultType alone).
type taskResult struct {
	mcp.ResultBase
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId,omitempty"`
	Status         tasks.Status               `json:"status,omitempty"`
	StatusMessage  string                     `json:"statusMessage,omitempty"`
	CreatedAt      string                     `json:"createdAt,omitempty"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt,omitempty"`
	TTLMs          *int64                     `json:"-"`
	PollIntervalMs int64                      `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          *tasks.Error               `json:"error,omitempty"`
}

// MarshalJSON writes ttlMs on every task (null while it runs: unlimited)
// and never on an acknowledgement.
func (r *taskResult) MarshalJSON() ([]byte, error) {
	type plain taskResult
	b, err := json.Marshal((*plain)(r))
	if err != nil || r.TaskID == "" {
		return b, err
	}
	ttl, _ := json.Marshal(r.TTLMs)
	return append(append(append(b[:len(b)-1:len(b)-1], `,"ttlMs":`...), ttl...), '}'), nil
}

// wireTask is t as the wire shows it, with resultType typ: "task" for a
// CreateTaskResult (its status and times only), "complete" for tasks/get.
func wireTask(t tasks.Task, typ string) *taskResult {
	res := &taskResult{ResultType: typ, TaskID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage,
		CreatedAt: t.CreatedAt.Format(time.RFC3339Nano), LastUpdatedAt: t.UpdatedAt.Format(time.RFC3339Nano),
		TTLMs: t.TTLMs(), PollIntervalMs: t.PollInterval.Milliseconds()}
	if typ == "task" {
		return res
	}
	switch t.Status {
	case tasks.InputRequired:
		res.InputRequests = t.Questions
	case tasks.Completed:
		res.Result = t.Result
	case tasks.Failed:
		res.Error = t.Error
		if res.StatusMessage == "" && t.Error != nil {
			res.StatusMessage = t.Error.Message
		}
	}
	return res
}

// taskRunner runs the tasks this instance started and follows every
// task's changes, from any instance, to cancel its calls and hand them
// their answers.
type taskRunner struct {
	ts  *tasks.Tasks
	g   *gateway.Gateway
	log *slog.Logger

	mu      sync.Mutex
	running map[string]*runningTask // by task id
	stop    func()
}

// runningTask is one task whose call runs here.
type runningTask struct {
	id      string
	owner   tasks.Owner
	cancel  context.CancelFunc
	poke    chan struct{} // a change: look for answers
	resync  atomic.Bool   // changes may have been missed: look at the task too
	asked   chan struct{} // closed once the call asked a question
	askOnce sync.Once
	settled chan struct{} // closed once the outcome is in the task

	mu      sync.Mutex
	waiting map[string]chan json.RawMessage // question key → its answer
}

func newTaskRunner(ts *tasks.Tasks, g *gateway.Gateway, log *slog.Logger) *taskRunner {
	r := &taskRunner{ts: ts, g: g, log: log, running: map[string]*runningTask{}}
	r.stop = ts.Watch(r.changed)
	return r
}

// changed hears of a task's change: a cancelled task's call is stopped;
// one that may have answers is poked. On a resync every task here looks
// again.
func (r *taskRunner) changed(c tasks.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, rt := range r.running {
		if !c.Resync && id != c.ID {
			continue
		}
		if c.Status == tasks.Cancelled {
			rt.cancel()
		}
		if c.Resync {
			rt.resync.Store(true)
		}
		select {
		case rt.poke <- struct{}{}:
		default:
		}
	}
}

// close stops following changes and cancels the calls running here (a
// non-read one sent latches its server, as a direct call's would).
func (r *taskRunner) close() {
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rt := range r.running {
		rt.cancel()
	}
}

// start runs call as a task of owner, for the client request at ctx: once
// the call is admitted, the task is created and returned; the call goes on
// after the request. A call refused or failed before that is answered as a
// direct call would be (res or err). With questionsFirst (a tool that runs
// only as a task), questions the call asks at once (within questionsAtOnce
// of the task's start) are put to the client first, by multi-round trip:
// ask is true, and the task is waiting for their answers (see taskCall).
func (r *taskRunner) start(ctx context.Context, owner tasks.Owner, read bool, call gateway.Call, questionsFirst bool) (t tasks.Task, ask bool, res mcp.Result, err error) {
	callCtx, cancel := context.WithCancel(context.Background())
	rt := &runningTask{owner: owner, cancel: cancel, poke: make(chan struct{}, 1), waiting: map[string]chan json.RawMessage{},
		asked: make(chan struct{}), settled: make(chan struct{})}
	created := make(chan tasks.Task, 1)
	call.Start = func(ctx context.Context) error {
		t, err := r.ts.Create(ctx, tasks.Spec{Owner: owner, Server: call.Server, Tool: call.Tool, Args: call.Args, Read: read})
		var limit *tasks.LimitError
		if errors.As(err, &limit) {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: limit.Error()}
		}
		if err != nil {
			return err
		}
		rt.mu.Lock()
		rt.id = t.ID
		rt.mu.Unlock()
		r.mu.Lock()
		r.running[t.ID] = rt
		r.mu.Unlock()
		go rt.collect(callCtx, r.ts)
		created <- t
		return nil
	}
	call.Client = taskClient{call.Client.Capabilities(), rt, r.ts}
	type outcome struct {
		res mcp.Result
		err error
	}
	direct := make(chan outcome, 1)
	go func() {
		defer cancel()
		got, err := r.g.CallTool(callCtx, call)
		if rt.id == "" { // refused or failed before the task: answered directly
			var res mcp.Result
			if err == nil {
				res, err = got.Tool()
			}
			direct <- outcome{res, err}
			return
		}
		r.settle(rt.id, call.Server, got, err)
		close(rt.settled)
		r.mu.Lock()
		delete(r.running, rt.id)
		r.mu.Unlock()
	}()
	select {
	case t = <-created:
	case o := <-direct:
		return tasks.Task{}, false, o.res, o.err
	case <-ctx.Done():
		// The client left before the call was admitted: as for a direct
		// call, the call is abandoned.
		cancel()
		select {
		case t = <-created: // admitted meanwhile: a task it is
			return t, false, nil, nil
		case o := <-direct:
			return tasks.Task{}, false, o.res, o.err
		}
	}
	if !questionsFirst {
		return t, false, nil, nil
	}
	wait := time.NewTimer(questionsAtOnce)
	defer wait.Stop()
	select {
	case <-rt.asked:
		// Questions asked together go out together (as rounds do).
		time.Sleep(10 * time.Millisecond)
	case <-rt.settled:
	case <-wait.C:
	case <-ctx.Done():
	}
	now, err := r.ts.Get(context.WithoutCancel(ctx), owner, t.ID)
	if err != nil {
		return t, false, nil, nil
	}
	return now, now.Status == tasks.InputRequired, nil, nil
}

// questionsAtOnce is how long a call of a tool that runs only as a task may
// take to ask its first questions of the client before its task handle is
// answered: those asked by then go to the client first, by multi-round
// trip (an upstream that asks before it works asks at once).
const questionsAtOnce = time.Second

// settle writes the call's outcome into its task: a tool result completes
// it (a tool's error too), a JSON-RPC error fails it; the task handle of
// an upstream that speaks the extension hands the task to server (see
// hand). A task cancelled meanwhile keeps its status; the outcome is
// dropped.
func (r *taskRunner) settle(id, server string, res *answer.Result, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if up, ok := handle(res, err); ok {
		r.hand(ctx, id, server, up)
		return
	}
	if err == nil {
		var b []byte
		b, err = resultJSON(res)
		if err == nil {
			_, err = r.ts.Complete(ctx, id, b)
		}
	} else {
		e := tasks.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			e = tasks.Error{Code: werr.Code, Message: werr.Message, Data: werr.Data}
		}
		_, err = r.ts.Fail(ctx, id, e)
	}
	if err != nil && !errors.Is(err, tasks.ErrFinished) {
		r.log.Error("settling a task failed; it is failed as an unknown outcome at the next start", "task", id, "err", err)
	}
}

// handle is the upstream's own task id, if the call's outcome is its task
// handle.
func handle(res *answer.Result, err error) (string, bool) {
	if err != nil || res == nil {
		return "", false
	}
	return res.TaskHandle()
}

// hand records that server took task id as its own task up: from now on
// the client's task requests are forwarded to it (passTask). A task
// cancelled while its call was on its way has the upstream's task
// cancelled too.
func (r *taskRunner) hand(ctx context.Context, id, server, up string) {
	_, err := r.ts.Handed(ctx, id, up)
	if errors.Is(err, tasks.ErrFinished) {
		_, err = r.g.TaskRequest(ctx, server, methodTasksCancel, up, nil)
	}
	if err != nil {
		r.log.Error("handing a task to its upstream failed", "task", id, "server", server, "err", err)
	}
}

// resultJSON is a call's tool result as JSON: as the upstream sent it
// when it is at hand.
func resultJSON(res *answer.Result) ([]byte, error) {
	if res.Raw != nil {
		return res.Raw, nil
	}
	d, err := res.Tool()
	if err != nil {
		return nil, err
	}
	return json.Marshal(d)
}

// collect hands the task's answers, as they come, to the questions
// waiting for them, until the call ends.
func (rt *runningTask) collect(ctx context.Context, ts *tasks.Tasks) {
	for {
		select {
		case <-rt.poke:
		case <-ctx.Done():
			return
		}
		if rt.resync.Swap(false) {
			if t, err := ts.Get(ctx, rt.owner, rt.id); err == nil && t.Status == tasks.Cancelled {
				rt.cancel() // cancelled while this instance heard nothing
				return
			} else if err != nil {
				rt.resync.Store(true) // looked at with the next change
			}
		}
		answers, err := ts.TakeAnswers(ctx, rt.id)
		if err != nil {
			continue // the next change or resync looks again
		}
		rt.mu.Lock()
		for key, a := range answers {
			if ch := rt.waiting[key]; ch != nil {
				ch <- a // buffered: one answer
				delete(rt.waiting, key)
			}
		}
		rt.mu.Unlock()
	}
}

// taskClient is a task's client as the gateway sees it: what it can
// answer is what the request that started the task declared; its
// questions wait in the task for tasks/update; progress and log messages
// have no request to go on and are dropped.
type taskClient struct {
	caps *mcp.ClientCapabilities
	rt   *runningTask
	ts   *tasks.Tasks
}

func (c taskClient) Capabilities() *mcp.ClientCapabilities { return c.caps }

func (c taskClient) Ask(ctx context.Context, _ string, q mcp.InputRequest) (mcp.InputResponse, error) {
	enc, err := json.Marshal(mcp.InputRequestMap{"q": q}) // the wire's {method, params}
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(enc, &m); err != nil {
		return nil, err
	}
	answer := make(chan json.RawMessage, 1)
	c.rt.mu.Lock() // held over Ask: an answer cannot come before the key waits
	keys, err := c.ts.Ask(ctx, c.rt.id, m["q"])
	if err == nil {
		c.rt.waiting[keys[0]] = answer
	}
	c.rt.mu.Unlock()
	if err != nil {
		return nil, err
	}
	c.rt.askOnce.Do(func() { close(c.rt.asked) })
	t := time.NewTimer(questionWait)
	defer t.Stop()
	select {
	case raw := <-answer:
		a := question.NewAnswer(q)
		if err := json.Unmarshal(raw, a); err != nil {
			return nil, fmt.Errorf("the client's answer to %s is not one: %w", question.Method(q), err)
		}
		return question.Checked(q, a)
	case <-t.C:
		return nil, fmt.Errorf("the client did not answer %s within %s (tasks/update)", question.Method(q), questionWait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (taskClient) Progress(context.Context, *mcp.ProgressNotificationParams) {}
func (taskClient) Log(context.Context, *mcp.LoggingMessageParams)            {}

var _ gateway.Client = taskClient{}

// taskCall runs r, a stateless-era tools/call, as a task if its tool runs
// as one and its client declares the extension, and refuses it (-32021)
// to a client that does not if its tool runs only as a task: handled is
// false for a call to run directly. A tool that runs only as a task puts
// the questions it asks at once to the client first, by multi-round trip,
// before its task handle (see taskRunner.start): the round that answers
// them, its request state naming the task, gets the handle.
//
// On the search view, the call is call_tool's: the tool it calls decides.
func (v *view) taskCall(ctx context.Context, r *mcp.CallToolRequest, from origin) (res mcp.Result, handled bool, err error) {
	name, args, ok := v.taskTarget(r.Params.Name, r.Params.Arguments)
	if !ok {
		return nil, false, nil
	}
	if id, ok := v.taskOfState(name, r.Params.RequestState); ok {
		res, err := v.answerFirstRound(ctx, ownerOf(from), id, r.Params.InputResponses)
		return res, true, err
	}
	if r.Params.RequestState != "" || len(r.Params.InputResponses) > 0 {
		return nil, false, nil
	}
	t, err := v.target(name)
	if err != nil {
		return nil, false, nil
	}
	support := v.g.TaskSupport(t.server, t.name)
	switch {
	case support == gateway.TaskForbidden:
		return nil, false, nil
	case !declaresTasks(r.ClientCapabilities()) && support == gateway.TaskRequired:
		return nil, true, tasksMissing(fmt.Sprintf("tool %q runs only as a task: it", name))
	case !declaresTasks(r.ClientCapabilities()):
		return nil, false, nil
	}
	call := gateway.Call{Server: t.server, Tool: t.name, Args: args, Meta: hopMeta(r.Params.Meta),
		Surface: from.surface, Client: gateway.SessionClient{ServerSession: r.Session}, Caller: from.caller, Who: from.who, PerRequest: true}
	task, ask, res, err := v.tasks.start(ctx, ownerOf(from), t.class == writes.ClassRead, call, support == gateway.TaskRequired)
	switch {
	case ask:
		res, err := v.firstRound(task, name)
		return res, true, err
	case task.ID != "":
		return wireTask(task, "task"), true, nil
	}
	if d, ok := res.(*mcp.CallToolResult); ok && err == nil {
		res, err = withResultType(d, "complete")
	}
	return res, true, err
}

// firstRound is the input-required result putting the questions of task t,
// a call of tool name, to its client before its handle.
func (v *view) firstRound(t tasks.Task, name string) (mcp.Result, error) {
	b, err := json.Marshal(t.Questions)
	if err != nil {
		return nil, err
	}
	var open mcp.InputRequestMap
	if err := json.Unmarshal(b, &open); err != nil {
		return nil, err
	}
	signed := "task." + t.ID
	d := &mcp.CallToolResult{InputRequests: open, RequestState: signed + "." + v.rounds.mac(signed, v.surface+"\x00task\x00"+name)}
	return withResultType(d, "input_required")
}

// taskOfState reads the request state firstRound gave for a call of tool
// name: the task it names.
func (v *view) taskOfState(name, state string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(state, "task.")
	if !ok {
		return "", false
	}
	id, mac, ok := strings.Cut(rest, ".")
	return id, ok && hmac.Equal([]byte(mac), []byte(v.rounds.mac("task."+id, v.surface+"\x00task\x00"+name)))
}

// answerFirstRound gives owner's task id the answers of its first round
// and returns its handle.
func (v *view) answerFirstRound(ctx context.Context, owner tasks.Owner, id string, responses mcp.InputResponseMap) (mcp.Result, error) {
	answers := make(map[string]json.RawMessage, len(responses))
	for k, a := range responses {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		answers[k] = b
	}
	t, err := v.tasks.ts.Answer(ctx, owner, id, answers)
	if errors.Is(err, tasks.ErrNotFound) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState names a task that is gone: call again without requestState"}
	}
	if err != nil {
		return nil, err
	}
	return wireTask(t, "task"), nil
}

// taskTarget is the tool a tools/call of name with args calls, as far as
// tasks go: itself, or on the search view the tool call_tool calls (its
// other tool never runs as a task). ok is false for a call that cannot
// run as a task here.
func (v *view) taskTarget(name string, args json.RawMessage) (string, json.RawMessage, bool) {
	if v.tasks == nil {
		return "", nil, false
	}
	if v.index == nil {
		return name, args, true
	}
	if name != callToolName {
		return "", nil, false
	}
	name, args, err := unwrapCall(args)
	return name, args, err == nil
}

// taskable reports whether a tools/call of name with args may run as a
// task here: the fast path leaves such calls to the SDK server's path.
func (v *view) taskable(name string, args json.RawMessage) bool {
	name, _, ok := v.taskTarget(name, args)
	if !ok {
		return false
	}
	t, err := v.target(name)
	return err == nil && v.g.TaskSupport(t.server, t.name) != gateway.TaskForbidden
}

// ownerOf is who owns the tasks a request starts: the caller its token
// names (all one caller without known callers).
func ownerOf(from origin) tasks.Owner { return tasks.Owner{Identity: from.who.Name()} }

// serveTask answers tasks/get, tasks/update and tasks/cancel.
func (v *view) serveTask(ctx context.Context, method string, r *mcp.ServerRequest[*taskParams]) (mcp.Result, error) {
	if !declaresTasks(r.ClientCapabilities()) {
		return nil, tasksMissing(method)
	}
	if v.tasks == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no task %q", r.Params.TaskID)}
	}
	owner := ownerOf(v.originOf(headerOf(r.Extra), r.Session, r.Params.Meta))
	ts := v.tasks.ts
	t, err := ts.Get(ctx, owner, r.Params.TaskID)
	switch {
	case err == nil && t.Upstream != "" && !t.Status.Terminal():
		return v.passTask(ctx, method, owner, t, r.Params.InputResponses)
	case err != nil || method == methodTasksGet:
	case method == methodTasksUpdate:
		_, err = ts.Answer(ctx, owner, r.Params.TaskID, r.Params.InputResponses)
	case method == methodTasksCancel:
		if t, err = ts.Cancel(ctx, owner, r.Params.TaskID); errors.Is(err, tasks.ErrFinished) {
			err = nil // a finished task's cancel is acknowledged, and changes nothing
		} else if err == nil && t.Upstream != "" { // handed to its upstream meanwhile
			err = v.cancelHanded(ctx, owner, t, true)
		}
	}
	switch {
	case errors.Is(err, tasks.ErrNotFound):
		return nil, noTask(r.Params.TaskID)
	case err != nil:
		return nil, err
	case method == methodTasksGet:
		return wireTask(t, "complete"), nil
	}
	return &taskResult{ResultType: "complete"}, nil
}

// noTask is the error for a task id the caller has no task by: the same
// whether it is unknown or another caller's, so that ids do not leak.
func noTask(id string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no task %q: it is unknown, another caller's, or was removed after its retention", id)}
}

// passTask forwards a task request for owner's task t, which its upstream
// runs as its own (tasks.Task.Upstream), and renews t for another
// retention. tasks/get answers the upstream's task as it sent it, under
// t's id; tasks/update and tasks/cancel are acknowledged once the
// upstream did (see cancelHanded). A task the upstream no longer knows is
// no task (see handedLost), and one it says was cancelled is cancelled
// here: a non-read call's server latches.
func (v *view) passTask(ctx context.Context, method string, owner tasks.Owner, t tasks.Task, responses map[string]json.RawMessage) (mcp.Result, error) {
	if method == methodTasksCancel {
		if err := v.cancelHanded(ctx, owner, t, false); err != nil {
			return nil, err
		}
		return &taskResult{ResultType: "complete"}, nil
	}
	raw, err := v.g.TaskRequest(ctx, t.Server, method, t.Upstream, responses)
	switch {
	case lostTask(err) && method != methodTasksGet && v.handedFinished(ctx, t):
		// A finished task's update is refused so: its outcome is known.
		return nil, err
	case lostTask(err):
		if err := v.handedLost(ctx, t); err != nil {
			return nil, err
		}
		return nil, noTask(t.ID) // its message would name the upstream's id
	case err != nil:
		return nil, err
	}
	if err := v.tasks.ts.Renew(ctx, owner, t); err != nil && !errors.Is(err, tasks.ErrNotFound) {
		return nil, err
	}
	if method != methodTasksGet {
		return &taskResult{ResultType: "complete"}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("server %q answered tasks/get with no object: %.80s", t.Server, raw)
	}
	switch upstreamStatus(fields) {
	case tasks.Completed, tasks.Failed:
		if !t.UpstreamDone {
			if err := v.tasks.ts.UpstreamFinished(ctx, owner, t.ID); err != nil && !errors.Is(err, tasks.ErrNotFound) {
				return nil, err
			}
		}
	case tasks.Cancelled: // by another route than this Warden
		if err := v.handedCancelled(ctx, owner, t); err != nil {
			return nil, err
		}
	}
	fields["taskId"], _ = json.Marshal(t.ID)
	return &passedTask{fields: fields}, nil
}

// cancelHanded has the upstream cancel t, its own task. Unless the upstream
// says it had completed or failed first (it then refuses the cancel as for
// an unknown task), t is cancelled here too (settled: it was already) and a
// non-read call's server latches, since how far the call went is unknown;
// one the upstream no longer knows latches as lost.
func (v *view) cancelHanded(ctx context.Context, owner tasks.Owner, t tasks.Task, settled bool) error {
	_, err := v.g.TaskRequest(ctx, t.Server, methodTasksCancel, t.Upstream, nil)
	switch {
	case v.handedFinished(ctx, t):
		if lostTask(err) {
			return nil
		}
		return err
	case lostTask(err) && settled:
		return v.latchHanded(t, writes.ReasonUpstreamLost)
	case lostTask(err):
		return v.handedLost(ctx, t)
	}
	var latched error
	if settled {
		latched = v.latchHanded(t, writes.ReasonCancelled)
	} else {
		latched = v.handedCancelled(ctx, owner, t)
	}
	if latched != nil {
		return latched
	}
	return err
}

// handedFinished reports whether t's upstream was seen to finish it, or
// says now that it completed or failed.
func (v *view) handedFinished(ctx context.Context, t tasks.Task) bool {
	return t.UpstreamDone || v.g.TaskFinished(ctx, t.Server, t.Upstream)
}

// handedCancelled cancels t here, which its upstream cancelled: a
// non-read call's server latches, once (a task settled meanwhile was
// latched, if need be, by what settled it).
func (v *view) handedCancelled(ctx context.Context, owner tasks.Owner, t tasks.Task) error {
	if _, err := v.tasks.ts.Cancel(ctx, owner, t.ID); err != nil {
		if errors.Is(err, tasks.ErrFinished) {
			return nil
		}
		return err
	}
	return v.latchHanded(t, writes.ReasonCancelled)
}

// handedLost settles t, which its upstream no longer knows, as failed with
// an unknown outcome; a non-read call's server latches. One its upstream
// was seen to finish is left as it is: its outcome is known.
func (v *view) handedLost(ctx context.Context, t tasks.Task) error {
	if t.UpstreamDone {
		return nil
	}
	_, err := v.tasks.ts.Fail(ctx, t.ID, tasks.Error{Code: tasks.CodeUnknownOutcome,
		Message: fmt.Sprintf("server %q no longer knows this task, so how its call ended is unknown", t.Server)})
	if errors.Is(err, tasks.ErrFinished) {
		return nil // settled, and latched if need be, already
	}
	if err != nil {
		return err
	}
	return v.latchHanded(t, writes.ReasonUpstreamLost)
}

// latchHanded latches the server of t, a task its upstream ran, when its
// call was not a read and the upstream was not seen to finish it: its
// outcome is unknown.
func (v *view) latchHanded(t tasks.Task, reason writes.Reason) error {
	if !t.InDoubt() {
		return nil
	}
	return v.g.TaskOutcomeUnknown(t.Server, t.Tool, t.ArgsSHA256, t.ID, reason)
}

// lostTask reports whether err is an upstream's answer that it knows no
// such task.
func lostTask(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams
}

// upstreamStatus is the status an upstream's tasks/get answer says.
func upstreamStatus(fields map[string]json.RawMessage) tasks.Status {
	var st tasks.Status
	_ = json.Unmarshal(fields["status"], &st)
	return st
}

// passedTask is an upstream's answer to tasks/get, its task id Warden's:
// its members as the upstream sent them, but for its own name in _meta,
// where Warden's goes.
type passedTask struct {
	mcp.ResultBase
	fields map[string]json.RawMessage
}

func (p *passedTask) MarshalJSON() ([]byte, error) {
	out := maps.Clone(p.fields)
	meta := map[string]json.RawMessage{}
	_ = json.Unmarshal(out["_meta"], &meta) // none, or not an object: Warden's alone
	delete(meta, mcp.MetaKeyServerInfo)
	for k, val := range p.Meta {
		b, err := json.Marshal(val)
		if err != nil {
			return nil, err
		}
		meta[k] = b
	}
	delete(out, "_meta")
	if len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		out["_meta"] = b
	}
	return json.Marshal(out)
}

// addTaskMethods lets srv accept the task methods; intercept serves them
// (it has the request's headers, which say whose tasks they are).
func addTaskMethods(srv *mcp.Server) {
	for _, m := range []string{methodTasksGet, methodTasksUpdate, methodTasksCancel} {
		_ = mcp.AddReceivingCustomMethod(srv, m, func(context.Context, *mcp.ServerSession, *taskParams) (*taskResult, error) {
			return nil, fmt.Errorf("unreachable: %s is intercepted", m)
		})
	}
}

// taskNameMismatch checks a stateless-era POST of a task method: its
// Mcp-Name header must name the task its body does (SEP-2663). It answers
// a mismatch (HTTP 400, -32020) and reports whether it did; the body is
// put back.
func taskNameMismatch(w http.ResponseWriter, r *http.Request) bool {
	switch r.Header.Get("Mcp-Method") {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
	default:
		return false
	}
	body, err := readBody(r)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false // the SDK's to refuse
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			TaskID *string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Params.TaskID == nil {
		return false
	}
	name := strings.TrimSpace(r.Header.Get("Mcp-Name"))
	if name == *m.Params.TaskID {
		return false
	}
	why := fmt.Sprintf("header mismatch: Mcp-Name %q does not name the task of params.taskId %q; send Mcp-Name: <taskId>", name, *m.Params.TaskID)
	if name == "" {
		why = "missing Mcp-Name header: send Mcp-Name: <taskId> with " + r.Header.Get("Mcp-Method")
	}
	id := m.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	writeAnswers(w, http.StatusBadRequest, []protocol.ErrorReply{protocol.NewErrorReply(id, mcp.CodeHeaderMismatch, why)}, false)
	return true
}
