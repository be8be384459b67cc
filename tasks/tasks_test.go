package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/store"
)

var (
	alice   = Owner{Identity: "alice", Session: "s1"}
	bob     = Owner{Identity: "bob"}
	aliceS2 = Owner{Identity: "alice", Session: "s2"}
)

// openBolt opens the embedded store at path as instance, closed at the
// test's end unless closed before.
func openBolt(t *testing.T, path, instance string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: path, Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { st.Close() }) })
	return st
}

func newTasks(t *testing.T, o Options) (*Tasks, store.Store) {
	t.Helper()
	st := openBolt(t, filepath.Join(t.TempDir(), "warden.db"), "one")
	return New(st, o), st
}

func create(t *testing.T, ts *Tasks, owner Owner, server string) Task {
	t.Helper()
	tk, err := ts.Create(context.Background(), Spec{Owner: owner, Server: server, Tool: "slow_compute", Args: json.RawMessage(`{"seconds":60}`)})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// A task goes working → input_required → (partly answered) → working →
// completed, reachable by its owner only, and never changes once finished.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	ts, _ := newTasks(t, Options{})
	tk := create(t, ts, alice, "fs")
	if tk.Status != Working || len(tk.ID) < 26 || tk.Instance != "one" || tk.TTL != time.Hour {
		t.Fatalf("created %+v", tk)
	}
	if got, err := ts.Get(ctx, alice, tk.ID); err != nil || got.ID != tk.ID || got.Status != Working {
		t.Fatalf("Get: %+v, %v", got, err)
	}
	for _, o := range []Owner{bob, aliceS2} {
		if _, err := ts.Get(ctx, o, tk.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get as %+v: %v, want ErrNotFound", o, err)
		}
		if _, err := ts.Cancel(ctx, o, tk.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("Cancel as %+v: %v, want ErrNotFound", o, err)
		}
		if _, err := ts.Answer(ctx, o, tk.ID, nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("Answer as %+v: %v, want ErrNotFound", o, err)
		}
	}
	if _, err := ts.Get(ctx, alice, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of an unknown id: %v", err)
	}

	qa, qb := raw(`{"method":"elicitation/create","params":{"message":"a?"}}`), raw(`{"method":"elicitation/create","params":{"message":"b?"}}`)
	keys, err := ts.Ask(ctx, tk.ID, qa, qb)
	if err != nil || len(keys) != 2 || keys[0] == keys[1] {
		t.Fatalf("Ask: %v, %v", keys, err)
	}
	a, b := keys[0], keys[1]
	if got, _ := ts.Get(ctx, alice, tk.ID); got.Status != InputRequired || !bytes.Equal(got.Questions[a], qa) || !bytes.Equal(got.Questions[b], qb) {
		t.Fatalf("asked: %+v", got)
	}
	got, err := ts.Answer(ctx, alice, tk.ID, map[string]json.RawMessage{a: raw(`{"action":"accept"}`), "zz": raw(`{}`)})
	if err != nil || got.Status != InputRequired || len(got.Questions) != 1 || got.Questions[b] == nil || len(got.Answers) != 1 {
		t.Fatalf("partial Answer: %+v, %v", got, err)
	}
	// An answer to a question answered already is ignored.
	got, err = ts.Answer(ctx, alice, tk.ID, map[string]json.RawMessage{a: raw(`{"action":"cancel"}`), b: raw(`{"action":"decline"}`)})
	if err != nil || got.Status != Working || len(got.Questions) != 0 {
		t.Fatalf("last Answer: %+v, %v", got, err)
	}
	answers, err := ts.TakeAnswers(ctx, tk.ID)
	if err != nil || string(answers[a]) != `{"action":"accept"}` || string(answers[b]) != `{"action":"decline"}` || len(answers) != 2 {
		t.Fatalf("TakeAnswers: %s, %v", answers, err)
	}
	if again, _ := ts.TakeAnswers(ctx, tk.ID); len(again) != 0 {
		t.Fatalf("answers taken twice: %s", again)
	}
	// A later question never reuses a key.
	if later, err := ts.Ask(ctx, tk.ID, qa); err != nil || len(later) != 1 || later[0] == a || later[0] == b {
		t.Fatalf("a later question: %v, %v", later, err)
	}
	if _, err := ts.Answer(ctx, alice, tk.ID, map[string]json.RawMessage{a: raw(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ts.Get(ctx, alice, tk.ID); got.Status != InputRequired || got.TTLMs() != nil {
		t.Fatalf("an old key answered the new question, or a running task has a TTL: %+v", got)
	}

	result := raw(`{"content":[{"type":"text","text":"done"}],"isError":true}`)
	done, err := ts.Complete(ctx, tk.ID, result)
	if err != nil || done.Status != Completed || !bytes.Equal(done.Result, result) {
		t.Fatalf("Complete: %+v, %v", done, err)
	}
	// Finished: nothing changes it any more.
	if _, err := ts.Complete(ctx, tk.ID, raw(`{}`)); !errors.Is(err, ErrFinished) {
		t.Errorf("Complete again: %v", err)
	}
	if _, err := ts.Fail(ctx, tk.ID, Error{Code: 1, Message: "x"}); !errors.Is(err, ErrFinished) {
		t.Errorf("Fail after Complete: %v", err)
	}
	if ttl := done.TTLMs(); ttl == nil || *ttl != done.UpdatedAt.Sub(done.CreatedAt).Milliseconds()+time.Hour.Milliseconds() {
		t.Errorf("a finished task's ttlMs %v: want the time from its creation to its removal", ttl)
	}
	if _, err := ts.Ask(ctx, tk.ID, qa); !errors.Is(err, ErrFinished) {
		t.Errorf("Ask after Complete: %v", err)
	}
	c, err := ts.Cancel(ctx, alice, tk.ID)
	if !errors.Is(err, ErrFinished) || c.Status != Completed {
		t.Errorf("Cancel of a completed task: %+v, %v; want it as it is and ErrFinished", c, err)
	}
	if got, _ := ts.Get(ctx, alice, tk.ID); got.Status != Completed || !bytes.Equal(got.Result, result) || got.Error != nil {
		t.Errorf("after all: %+v", got)
	}
}

// Cancel settles a running task at once; the runner's late outcome is
// refused and dropped.
func TestCancelThenLateOutcome(t *testing.T) {
	ctx := context.Background()
	ts, _ := newTasks(t, Options{})
	tk := create(t, ts, alice, "fs")
	if _, err := ts.Ask(ctx, tk.ID, raw(`{}`)); err != nil {
		t.Fatal(err)
	}
	c, err := ts.Cancel(ctx, alice, tk.ID)
	if err != nil || c.Status != Cancelled || c.Questions != nil {
		t.Fatalf("Cancel: %+v, %v", c, err)
	}
	if _, err := ts.Complete(ctx, tk.ID, raw(`{"content":[]}`)); !errors.Is(err, ErrFinished) {
		t.Errorf("Complete after Cancel: %v", err)
	}
	if got, _ := ts.Get(ctx, alice, tk.ID); got.Status != Cancelled || got.Result != nil {
		t.Errorf("after a late result: %+v", got)
	}
}

// The record holds the arguments' canonical hash, never the arguments.
func TestArgumentsAreNotKept(t *testing.T) {
	ctx := context.Background()
	ts, st := newTasks(t, Options{})
	args := raw(`{"secret": "hunter2-value", "n": 1}`)
	tk, err := ts.Create(ctx, Spec{Owner: alice, Server: "fs", Tool: "write", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if tk.ArgsSHA256 != canon.ArgsSHA256(raw(`{"n":1,"secret":"hunter2-value"}`)) {
		t.Errorf("hash %s is not the canonical one", tk.ArgsSHA256)
	}
	err = st.View(ctx, func(tx store.Tx) error {
		for _, b := range []string{taskBucket, runningBucket, expiryBucket} {
			if err := tx.Scan(b, nil, false, func(k, v []byte) error {
				if bytes.Contains(v, []byte("hunter2")) || bytes.Contains(k, []byte("hunter2")) {
					t.Errorf("%s holds the arguments: %s", b, v)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Beyond a server's or a caller's limit Create refuses with a LimitError;
// a finished task frees its place.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	ts, _ := newTasks(t, Options{MaxPerServer: 2, MaxPerCaller: 3})
	a := create(t, ts, alice, "fs")
	create(t, ts, bob, "fs")
	var le *LimitError
	_, err := ts.Create(ctx, Spec{Owner: alice, Server: "fs", Tool: "t"})
	if !errors.As(err, &le) || le.Scope != "server" || le.Name != "fs" || le.Limit != 2 {
		t.Fatalf("third task of fs: %v", err)
	}
	create(t, ts, alice, "db")
	create(t, ts, aliceS2, "mail") // alice's third, from another session
	_, err = ts.Create(ctx, Spec{Owner: alice, Server: "web", Tool: "t"})
	if !errors.As(err, &le) || le.Scope != "caller" || le.Name != "alice" || le.Limit != 3 {
		t.Fatalf("alice's fourth task: %v", err)
	}
	if _, err := ts.Cancel(ctx, alice, a.ID); err != nil {
		t.Fatal(err)
	}
	create(t, ts, alice, "fs") // both places free again
}

// Watch reports each change, in order, once committed.
func TestWatch(t *testing.T) {
	ctx := context.Background()
	ts, _ := newTasks(t, Options{})
	ch := make(chan Change, 16)
	stop := ts.Watch(func(c Change) { ch <- c })
	defer stop()
	tk := create(t, ts, alice, "fs")
	keys, err := ts.Ask(ctx, tk.ID, raw(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Answer(ctx, alice, tk.ID, map[string]json.RawMessage{keys[0]: raw(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Complete(ctx, tk.ID, raw(`{"content":[]}`)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []Status{Working, InputRequired, Working, Completed} {
		select {
		case c := <-ch:
			if c.ID != tk.ID || c.Status != want || c.Owner != alice {
				t.Fatalf("change %+v, want %s of %s", c, want, tk.ID)
			}
		case <-time.After(30 * time.Second): // a bound against a hang
			t.Fatalf("no change %s", want)
		}
	}
}

// At start, tasks a dead instance (or this one's last run) left running
// fail with an unknown outcome, each reported to lost first; finished
// ones stay as they were; one lost could not report stays running.
func TestRecover(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	st := openBolt(t, path, "first")
	ts := New(st, Options{})
	running := create(t, ts, alice, "fs")
	waiting := create(t, ts, bob, "db")
	if _, err := ts.Ask(ctx, waiting.ID, raw(`{}`)); err != nil {
		t.Fatal(err)
	}
	done := create(t, ts, alice, "fs")
	if _, err := ts.Complete(ctx, done.ID, raw(`{"content":[]}`)); err != nil {
		t.Fatal(err)
	}
	st.Close() // the instance dies

	st = openBolt(t, path, "second")
	ts = New(st, Options{})
	if _, err := ts.Recover(ctx, func(Task) error { return errors.New("the latch cannot be written") }); err == nil {
		t.Fatal("Recover went on though lost failed")
	}
	if got, _ := ts.Get(ctx, alice, running.ID); got.Status != Working {
		t.Fatalf("a task lost could not report: %s, want it left working", got.Status)
	}
	var reported []string
	failed, err := ts.Recover(ctx, func(tk Task) error { reported = append(reported, tk.ID); return nil })
	if err != nil || len(failed) != 2 || len(reported) != 2 {
		t.Fatalf("Recover: %d failed, %d reported, %v", len(failed), len(reported), err)
	}
	for _, c := range []struct {
		o  Owner
		id string
	}{{alice, running.ID}, {bob, waiting.ID}} {
		got, _ := ts.Get(ctx, c.o, c.id)
		if got.Status != Failed || got.Error == nil || got.Error.Code != CodeUnknownOutcome || got.Error.Message != UnknownOutcome || got.Questions != nil {
			t.Errorf("recovered %+v", got)
		}
	}
	if got, _ := ts.Get(ctx, alice, done.ID); got.Status != Completed {
		t.Errorf("a finished task was recovered: %+v", got)
	}
	// Recovered tasks no longer count against the limits.
	ts = New(st, Options{MaxPerServer: 1})
	create(t, ts, alice, "fs")

	// A restart under the same instance name: its own tasks are from its
	// last run.
	mine := create(t, ts, bob, "web")
	failed, err = ts.Recover(ctx, func(Task) error { return nil })
	if err != nil || len(failed) != 2 {
		t.Fatalf("Recover of this instance's last run: %d, %v", len(failed), err)
	}
	if got, _ := ts.Get(ctx, bob, mine.ID); got.Status != Failed {
		t.Errorf("%+v", got)
	}
}

// Finished tasks go once their TTL has passed since they finished;
// running ones never.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ts, _ := newTasks(t, Options{Retention: time.Hour, Now: clock})
	defer func(n int) { sweepBatch = n }(sweepBatch)
	sweepBatch = 3

	running := create(t, ts, alice, "fs")
	var finished []string
	for i := 0; i < sweepBatch+3; i++ { // more than one transaction's worth
		tk := create(t, ts, bob, "db")
		if _, err := ts.Cancel(ctx, bob, tk.ID); err != nil {
			t.Fatal(err)
		}
		finished = append(finished, tk.ID)
	}
	advance(30 * time.Minute)
	late := create(t, ts, bob, "db")
	if _, err := ts.Complete(ctx, late.ID, raw(`{"content":[]}`)); err != nil {
		t.Fatal(err)
	}

	advance(30*time.Minute - time.Millisecond)
	if n, err := ts.Sweep(ctx, noneUnfinished(t)); n != 0 || err != nil {
		t.Fatalf("sweep before the TTL: %d, %v", n, err)
	}
	advance(time.Millisecond)
	if n, err := ts.Sweep(ctx, noneUnfinished(t)); n != len(finished) || err != nil {
		t.Fatalf("sweep at the TTL: %d, %v; want %d", n, err, len(finished))
	}
	if _, err := ts.Get(ctx, bob, finished[0]); !errors.Is(err, ErrNotFound) {
		t.Errorf("an expired task: %v", err)
	}
	if _, err := ts.Get(ctx, bob, late.ID); err != nil {
		t.Errorf("a task finished later went too: %v", err)
	}
	advance(24 * time.Hour)
	if n, _ := ts.Sweep(ctx, noneUnfinished(t)); n != 1 {
		t.Errorf("second sweep removed %d, want 1", n)
	}
	if _, err := ts.Get(ctx, alice, running.ID); err != nil {
		t.Errorf("a running task was swept: %v", err)
	}
}
