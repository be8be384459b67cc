package surface

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/tasks"
)

// runnerWith is a task runner on a store of its own that hears of no
// change unless told (changed), running a task of owner as start would.
func runnerWith(t *testing.T, owner tasks.Owner) (*taskRunner, *runningTask, context.Context) {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db"), Instance: "one"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ts := tasks.New(st, tasks.Options{})
	task, err := ts.Create(context.Background(), tasks.Spec{Owner: owner, Server: "s", Tool: "t", Args: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	rt := &runningTask{id: task.ID, owner: owner, cancel: cancel, poke: make(chan struct{}, 1), waiting: map[string]chan json.RawMessage{}}
	r := &taskRunner{ts: ts, log: slog.New(slog.DiscardHandler), running: map[string]*runningTask{task.ID: rt}}
	go rt.collect(ctx, ts)
	return r, rt, ctx
}

// A task's answers reach the question waiting for them, each its own.
func TestTaskAnswersReachTheirQuestions(t *testing.T) {
	owner := tasks.Owner{Identity: "alice"}
	r, rt, ctx := runnerWith(t, owner)
	first, second := make(chan json.RawMessage, 1), make(chan json.RawMessage, 1)
	keys, err := r.ts.Ask(ctx, rt.id, json.RawMessage(`{"method":"elicitation/create"}`), json.RawMessage(`{"method":"elicitation/create"}`))
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	rt.waiting[keys[0]], rt.waiting[keys[1]] = first, second
	rt.mu.Unlock()
	if _, err := r.ts.Answer(ctx, owner, rt.id, map[string]json.RawMessage{keys[1]: json.RawMessage(`"two"`)}); err != nil {
		t.Fatal(err)
	}
	r.changed(tasks.Change{ID: rt.id, Status: tasks.InputRequired})
	if got := string(<-second); got != `"two"` {
		t.Errorf("the second question got %s", got)
	}
	if _, err := r.ts.Answer(ctx, owner, rt.id, map[string]json.RawMessage{keys[0]: json.RawMessage(`"one"`)}); err != nil {
		t.Fatal(err)
	}
	r.changed(tasks.Change{ID: rt.id, Status: tasks.Working})
	if got := string(<-first); got != `"one"` {
		t.Errorf("the first question got %s", got)
	}
}

// A task cancelled while its instance heard nothing (the store was out of
// reach) has its call stopped once the instance resyncs.
func TestTaskCancelledUnheardStopsOnResync(t *testing.T) {
	owner := tasks.Owner{Identity: "alice"}
	r, rt, ctx := runnerWith(t, owner)
	if _, err := r.ts.Cancel(context.Background(), owner, rt.id); err != nil {
		t.Fatal(err)
	}
	r.changed(tasks.Change{Resync: true})
	<-ctx.Done()
}
