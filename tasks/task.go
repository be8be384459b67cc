package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Status is a task's state, spelled as on the wire.
type Status string

// The statuses. Completed, Failed and Cancelled are terminal: a task in one
// never changes again.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is final.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Owner is who may see and act on a task: the caller's identity and, when
// the caller's calls are bound to a session, that session. Only the same
// owner reaches the task; to anyone else it does not exist.
type Owner struct {
	Identity string `json:"identity"`
	Session  string `json:"session,omitempty"`
}

// Error is a failed task's error, in JSON-RPC's shape (the wire's
// tasks/get "error").
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// CodeUnknownOutcome is the code of a task whose instance died while it
// ran: whether the call took effect is not known (JSON-RPC's internal
// error).
const CodeUnknownOutcome = -32603

// Task is one durable task record.
type Task struct {
	ID    string `json:"id"`
	Owner Owner  `json:"owner"`
	// Server and Tool name the call; ArgsSHA256 is its arguments' canonical
	// hash (the arguments themselves are never kept).
	Server     string `json:"server"`
	Tool       string `json:"tool"`
	ArgsSHA256 string `json:"args_sha256"`
	// Read: the tool is a read (it never latches its server).
	Read bool `json:"read,omitempty"`
	// Instance is the Warden instance running the call.
	Instance string `json:"instance"`

	Status        Status    `json:"status"`
	StatusMessage string    `json:"status_message,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// PollInterval is the interval suggested to pollers; TTL how long the
	// task stays after it finished (and so at least after it was created).
	PollInterval time.Duration `json:"poll_interval"`
	TTL          time.Duration `json:"ttl"`

	// Result is a completed task's tool result (a CallToolResult, JSON, as
	// the upstream answered it, isError included).
	Result json.RawMessage `json:"result,omitempty"`
	// Error is a failed task's error.
	Error *Error `json:"error,omitempty"`

	// Questions are the input requests waiting for the client, by the id the
	// client answers them under (the wire's inputRequests); Answers the
	// responses received and not yet taken by the runner.
	Questions map[string]json.RawMessage `json:"questions,omitempty"`
	Answers   map[string]json.RawMessage `json:"answers,omitempty"`
	// Asked counts the questions ever asked: it numbers their keys.
	Asked int `json:"asked,omitempty"`

	// Upstream is, for a task passed through to a server that speaks the
	// tasks extension itself, that server's id for it: the task runs
	// there, and its requests are forwarded with this id. It is never
	// shown to the client, whose id is ID.
	Upstream string `json:"upstream,omitempty"`
	// UpstreamDone: the upstream running it was seen to say it completed
	// or failed (UpstreamFinished), so its outcome is known however its
	// upstream answers later.
	UpstreamDone bool `json:"upstream_done,omitempty"`
}

// InDoubt reports whether t's call, its outcome unknown, leaves its
// server in doubt: a non-read call its upstream was not seen to finish.
func (t *Task) InDoubt() bool { return !t.Read && !t.UpstreamDone }

// runs reports whether the task runs in Warden: not finished, and not
// handed to its upstream. The limits count these, and a task that ran
// here when its instance died is failed (see Recover).
func (t *Task) runs() bool { return !t.Status.Terminal() && t.Upstream == "" }

// TTLMs is the task's ttlMs on the wire: the milliseconds from its
// creation to its removal, nil ("unlimited") while it runs, as a running
// task is never removed.
func (t *Task) TTLMs() *int64 {
	if !t.Status.Terminal() {
		return nil
	}
	ms := t.expires().Sub(t.CreatedAt).Milliseconds()
	return &ms
}

// expires is when a finished task, or one handed to its upstream, is
// removed.
func (t *Task) expires() time.Time { return t.UpdatedAt.Add(t.TTL) }

// ErrNotFound: no task with that id for that owner (another owner's task
// is not found either). The surface answers -32602.
var ErrNotFound = errors.New("tasks: no such task")

// ErrFinished: the task is completed, failed or cancelled and does not
// change again. Cancel returns it with the task as it is (the wire's cancel
// of a finished task is an acknowledgement, not an error).
var ErrFinished = errors.New("tasks: the task has finished")

// LimitError refuses a task beyond a limit on running tasks.
type LimitError struct {
	Scope string // "server" or "caller"
	Name  string // the server's name or the caller's identity
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("tasks: %s %q already runs %d tasks, the most allowed; wait for one to finish or cancel one (tasks/cancel), or raise the limit", e.Scope, e.Name, e.Limit)
}
