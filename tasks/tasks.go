package tasks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/store"
)

// Where tasks live in the store:
//
//	tasks          id → Task (JSON), a secret (Tx.PutSecret): its answers
//	               carry what a person typed, its result a tool's output,
//	               so a copy of the store without its key reveals neither
//	tasks_running  "s" 0 server 0 id and "c" 0 identity 0 id → instance,
//	               for each task running here (Task.runs): the limits
//	               count these
//	tasks_expiry   8-byte expiry (Unix ns, big-endian) id → "", for each
//	               other task (finished, or handed to its upstream): the
//	               sweep walks these in order
//
// Every change of a task happens in one Update holding the task's lock;
// Create holds its server's lock, then its caller's, while it counts.
const (
	taskBucket    = "tasks"
	runningBucket = "tasks_running"
	expiryBucket  = "tasks_expiry"
	// Topic is where every change of a task is published (a Change).
	Topic = "tasks"
)

// Options bound and shape the tasks.
type Options struct {
	// MaxPerServer and MaxPerCaller bound the tasks running at once for one
	// server and for one caller identity (default 32 and 16).
	MaxPerServer, MaxPerCaller int
	// Retention is how long a finished task stays (default one hour): its
	// TTL.
	Retention time.Duration
	// PollInterval is suggested to pollers (default one second).
	PollInterval time.Duration
	// Now is the clock (default time.Now), for tests of expiry.
	Now func() time.Time
}

// Tasks keeps task records in a store. Safe for concurrent use; any number
// of instances may share the store.
type Tasks struct {
	st store.Store
	o  Options
}

// New returns the tasks kept in st.
func New(st store.Store, o Options) *Tasks {
	if o.MaxPerServer <= 0 {
		o.MaxPerServer = 32
	}
	if o.MaxPerCaller <= 0 {
		o.MaxPerCaller = 16
	}
	if o.Retention <= 0 {
		o.Retention = time.Hour
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Tasks{st: st, o: o}
}

// now is the clock's time in UTC, to the millisecond (what the wire shows).
func (ts *Tasks) now() time.Time { return ts.o.Now().UTC().Truncate(time.Millisecond) }

// Spec is what a task is created from.
type Spec struct {
	Owner        Owner
	Server, Tool string
	// Args are the call's arguments: only their hash is kept.
	Args json.RawMessage
	// Read: the tool is a read.
	Read bool
}

// Create writes down a new working task, run by this instance, and returns
// it once committed: a Get for its id finds it from then on. Beyond a limit
// it refuses with a *LimitError and writes nothing.
func (ts *Tasks) Create(ctx context.Context, sp Spec) (Task, error) {
	now := ts.now()
	t := Task{
		ID: rand.Text(), Owner: sp.Owner, Server: sp.Server, Tool: sp.Tool,
		ArgsSHA256: canon.ArgsSHA256(sp.Args), Read: sp.Read, Instance: ts.st.Instance(),
		Status: Working, CreatedAt: now, UpdatedAt: now,
		PollInterval: ts.o.PollInterval, TTL: ts.o.Retention,
	}
	err := ts.st.Update(ctx, func(tx store.Tx) error {
		for _, lim := range []struct {
			scope, name string
			max         int
		}{{"server", sp.Server, ts.o.MaxPerServer}, {"caller", sp.Owner.Identity, ts.o.MaxPerCaller}} {
			if err := tx.Lock("tasks/" + lim.scope + "/" + lim.name); err != nil {
				return err
			}
			n, err := countPrefix(tx, runningPrefix(lim.scope, lim.name))
			if err != nil {
				return err
			}
			if n >= lim.max {
				return &LimitError{Scope: lim.scope, Name: lim.name, Limit: lim.max}
			}
		}
		return ts.put(tx, &t, nil)
	})
	if err != nil {
		return Task{}, fmt.Errorf("tasks: creating a task of %s/%s: %w", sp.Server, sp.Tool, err)
	}
	return t, nil
}

// Get returns owner's task id; another owner's is ErrNotFound.
func (ts *Tasks) Get(ctx context.Context, owner Owner, id string) (Task, error) {
	var t Task
	err := ts.st.View(ctx, func(tx store.Tx) error {
		var err error
		t, err = getTask(tx, id)
		if err == nil && t.Owner != owner {
			err = ErrNotFound
		}
		return err
	})
	return t, err
}

// Ask parks the running task on questions for its client (input
// requests, JSON): it is input_required until every question pending is
// answered. Each question gets a key never used before in this task (the
// wire wants keys unique over a task's life), returned in order. A
// finished task refuses with ErrFinished (it was cancelled).
func (ts *Tasks) Ask(ctx context.Context, id string, questions ...json.RawMessage) ([]string, error) {
	var keys []string
	_, err := ts.change(ctx, id, nil, func(t *Task) (bool, error) {
		if t.Status.Terminal() {
			return false, ErrFinished
		}
		keys = keys[:0]
		if t.Questions == nil {
			t.Questions = map[string]json.RawMessage{}
		}
		for _, q := range questions {
			t.Asked++
			k := fmt.Sprint("input-", t.Asked)
			t.Questions[k] = q
			keys = append(keys, k)
		}
		if len(t.Questions) > 0 {
			t.Status = InputRequired
		}
		return len(questions) > 0, nil
	})
	return keys, err
}

// Answer takes owner's answers to the task's pending questions: each
// answered question moves to Answers; answers to anything not pending are
// ignored. Once none is pending the task is working again. A task with
// nothing pending (finished too) is left as it is.
func (ts *Tasks) Answer(ctx context.Context, owner Owner, id string, answers map[string]json.RawMessage) (Task, error) {
	return ts.change(ctx, id, &owner, func(t *Task) (bool, error) {
		changed := false
		for k, a := range answers {
			if _, pending := t.Questions[k]; !pending || t.Status.Terminal() {
				continue
			}
			delete(t.Questions, k)
			if t.Answers == nil {
				t.Answers = map[string]json.RawMessage{}
			}
			t.Answers[k] = a
			changed = true
		}
		if changed && len(t.Questions) == 0 {
			t.Status = Working
		}
		return changed, nil
	})
}

// TakeAnswers returns the answers received for the task and forgets them:
// the runner hands them to the upstream.
func (ts *Tasks) TakeAnswers(ctx context.Context, id string) (map[string]json.RawMessage, error) {
	var taken map[string]json.RawMessage
	_, err := ts.change(ctx, id, nil, func(t *Task) (bool, error) {
		taken, t.Answers = t.Answers, nil
		return len(taken) > 0, nil
	})
	return taken, err
}

// Complete settles the task with the tool's result (a tool that reported
// an error completes too, with isError in its result). A finished task
// refuses with ErrFinished: drop the result.
func (ts *Tasks) Complete(ctx context.Context, id string, result json.RawMessage) (Task, error) {
	return ts.settle(ctx, id, nil, func(t *Task) { t.Status, t.Result = Completed, result })
}

// Fail settles the task as failed with e (a protocol-level error: the
// call did not produce a tool result). A finished task refuses with
// ErrFinished.
func (ts *Tasks) Fail(ctx context.Context, id string, e Error) (Task, error) {
	return ts.settle(ctx, id, nil, func(t *Task) { t.Status, t.Error = Failed, &e })
}

// Cancel settles owner's task as cancelled, at once: the runner, watching,
// stops the call, and what it answers later is dropped. A finished task is
// returned as it is with ErrFinished.
func (ts *Tasks) Cancel(ctx context.Context, owner Owner, id string) (Task, error) {
	return ts.settle(ctx, id, &owner, func(t *Task) { t.Status = Cancelled })
}

// Handed records that the task's upstream, which speaks the tasks
// extension itself, took the call as its own task upstreamID: from now on
// the task runs there (it leaves the limits' count, and a restart of
// Warden leaves it be), and Warden only forwards its requests. It stays
// for its TTL after it was last reached (Renew). A task finished
// meanwhile (cancelled while its call was on its way) refuses with
// ErrFinished: the upstream's task is to be cancelled.
func (ts *Tasks) Handed(ctx context.Context, id, upstreamID string) (Task, error) {
	return ts.change(ctx, id, nil, func(t *Task) (bool, error) {
		if t.Status.Terminal() {
			return false, ErrFinished
		}
		t.Upstream, t.Status, t.Questions, t.Answers = upstreamID, Working, nil, nil
		return true, nil
	})
}

// UpstreamFinished records that the upstream running owner's task id, as
// its own, said it completed or failed (see Task.UpstreamDone).
func (ts *Tasks) UpstreamFinished(ctx context.Context, owner Owner, id string) error {
	_, err := ts.change(ctx, id, &owner, func(t *Task) (bool, error) {
		if t.Upstream == "" || t.UpstreamDone {
			return false, nil
		}
		t.UpstreamDone = true
		return true, nil
	})
	return err
}

// Renew keeps owner's task t (as read), handed to its upstream, for
// another TTL from now: its client reached it. To spare the store a write
// a poll, a task renewed within the last tenth of its TTL is left as it is
// (so it stays at least nine tenths of a TTL after its last request).
// Other tasks are left as they are.
func (ts *Tasks) Renew(ctx context.Context, owner Owner, t Task) error {
	if t.Upstream == "" || ts.now().Sub(t.UpdatedAt) < t.TTL/10 {
		return nil
	}
	_, err := ts.change(ctx, t.ID, &owner, func(t *Task) (bool, error) { return t.Upstream != "", nil })
	return err
}

// settle makes the task finished with set.
func (ts *Tasks) settle(ctx context.Context, id string, owner *Owner, set func(*Task)) (Task, error) {
	return ts.change(ctx, id, owner, func(t *Task) (bool, error) {
		if t.Status.Terminal() {
			return false, ErrFinished
		}
		set(t)
		t.Questions, t.Answers = nil, nil
		return true, nil
	})
}

// change applies fn to task id (owner's, unless owner is nil) in one
// transaction holding the task's lock, and writes it back if fn reports a
// change. It returns the task as it is after, also when fn fails.
func (ts *Tasks) change(ctx context.Context, id string, owner *Owner, fn func(*Task) (bool, error)) (Task, error) {
	var out Task
	err := ts.st.Update(ctx, func(tx store.Tx) error {
		if err := tx.Lock("task/" + id); err != nil {
			return err
		}
		t, err := getTask(tx, id)
		if err != nil {
			return err
		}
		if owner != nil && t.Owner != *owner {
			return ErrNotFound
		}
		old := t
		changed, err := fn(&t)
		out = t
		if err != nil || !changed {
			return err
		}
		t.UpdatedAt = ts.now()
		out = t
		return ts.put(tx, &t, &old)
	})
	return out, err
}

// put writes t (which was old; nil for a new task), keeps the indexes,
// and publishes the change.
func (ts *Tasks) put(tx store.Tx, t *Task, old *Task) error {
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := tx.PutSecret(taskBucket, []byte(t.ID), v); err != nil {
		return err
	}
	if err := reindex(tx, t, old); err != nil {
		return err
	}
	msg, err := json.Marshal(Change{ID: t.ID, Status: t.Status, Owner: t.Owner})
	if err != nil {
		return err
	}
	return tx.Publish(Topic, msg)
}

// reindex moves t between the indexes as it changed from old (nil: new):
// a task that runs here is in the running index; any other in the expiry
// index, under its expiry, which moves when a handed task is renewed.
func reindex(tx store.Tx, t, old *Task) error {
	ran := old != nil && old.runs()
	switch {
	case old == nil && t.runs():
		for _, k := range runningKeys(t) {
			if err := tx.Put(runningBucket, k, []byte(t.Instance)); err != nil {
				return err
			}
		}
		return nil
	case t.runs():
		return nil
	case ran:
		for _, k := range runningKeys(t) {
			if err := tx.Delete(runningBucket, k); err != nil {
				return err
			}
		}
	case old != nil:
		if bytes.Equal(expiryKey(old), expiryKey(t)) {
			return nil
		}
		if err := tx.Delete(expiryBucket, expiryKey(old)); err != nil {
			return err
		}
	}
	return tx.Put(expiryBucket, expiryKey(t), nil)
}

func getTask(tx store.Tx, id string) (Task, error) {
	var t Task
	v, err := tx.GetSecret(taskBucket, []byte(id))
	if err != nil {
		return t, err
	}
	if v == nil {
		return t, ErrNotFound
	}
	if err := json.Unmarshal(v, &t); err != nil {
		return t, fmt.Errorf("tasks: the record of task %s is damaged: %w", id, err)
	}
	return t, nil
}

// runningPrefix starts the running-index keys of a server ("server") or a
// caller ("caller").
func runningPrefix(scope, name string) []byte {
	return append([]byte{scope[0], 0}, append([]byte(name), 0)...)
}

func runningKeys(t *Task) [][]byte {
	return [][]byte{
		append(runningPrefix("server", t.Server), t.ID...),
		append(runningPrefix("caller", t.Owner.Identity), t.ID...),
	}
}

func expiryKey(t *Task) []byte {
	return append(binary.BigEndian.AppendUint64(nil, uint64(t.expires().UnixNano())), t.ID...)
}

func countPrefix(tx store.Tx, prefix []byte) (int, error) {
	n := 0
	err := tx.Scan(runningBucket, prefix, false, func(_, _ []byte) error {
		n++
		return nil
	})
	return n, err
}

// Change is what Watch reports: a task changed (a status, a question
// asked, an answer given or taken), and its status now. Resync: changes
// may have been missed (the store was unreachable); reload what you follow.
type Change struct {
	ID     string `json:"id"`
	Status Status `json:"status"`
	Owner  Owner  `json:"owner"`
	Resync bool   `json:"-"`
}

// Watch calls fn with every change of every task, made by any instance,
// once committed (see store.Watch: fn must not block for long). The
// returned func stops it.
func (ts *Tasks) Watch(fn func(Change)) (stop func()) {
	return ts.st.Watch(Topic, func(e store.Event) {
		var c Change
		if e.Resync {
			fn(Change{Resync: true})
			return
		}
		if json.Unmarshal(e.Msg, &c) == nil {
			fn(c)
		}
	})
}
