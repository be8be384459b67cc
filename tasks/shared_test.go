package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/store/storetest"
)

// sharedStores opens instances on one fresh PostgreSQL database, each
// closed at the test's end (closing one again after a test closed it, as
// an instance that died, is harmless).
func sharedStores(t *testing.T) func(instance string) store.Store {
	t.Helper()
	url := pgtest.Start(t, pgtest.Options{}).NewDatabase(t)
	return func(instance string) store.Store {
		st, err := store.Open(context.Background(), store.Options{URL: url, Key: storetest.Key, Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
}

// Two instances share tasks: answers to one task's questions given at
// once on both all land (each change holds the task's lock: without it,
// read committed loses all but one of concurrent read-modify-writes);
// concurrent creates on both stop at the limit exactly; and the tasks of
// an instance that died fail on the other's Recover, while a live
// instance's are left alone.
func TestSharedByInstances(t *testing.T) {
	ctx := context.Background()
	open := sharedStores(t)
	stA, stB := open("a"), open("b")
	a, b := New(stA, Options{MaxPerServer: 5}), New(stB, Options{MaxPerServer: 5})

	const n = 16
	tk, err := a.Create(ctx, Spec{Owner: alice, Server: "fs", Tool: "multi_input"})
	if err != nil {
		t.Fatal(err)
	}
	qs := make([]json.RawMessage, n)
	for i := range qs {
		qs[i] = raw(`{"method":"elicitation/create"}`)
	}
	keys, err := a.Ask(ctx, tk.ID, qs...)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i, k := range keys {
		ts := []*Tasks{a, b}[i%2]
		wg.Go(func() {
			if _, err := ts.Answer(ctx, alice, tk.ID, map[string]json.RawMessage{k: raw(fmt.Sprint(i))}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := b.Get(ctx, alice, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != Working || len(got.Questions) != 0 || len(got.Answers) != n {
		t.Fatalf("after %d concurrent answers: status %s, %d pending, %d answers", n, got.Status, len(got.Questions), len(got.Answers))
	}

	// Four more may run on fs (one runs); eight try at once.
	var mu sync.Mutex
	made, refused := 0, 0
	for i := range 8 {
		ts := []*Tasks{a, b}[i%2]
		wg.Go(func() {
			_, err := ts.Create(ctx, Spec{Owner: Owner{Identity: fmt.Sprint("caller", i)}, Server: "fs", Tool: "t"})
			var le *LimitError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				made++
			case errors.As(err, &le):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if made != 4 || refused != 4 {
		t.Fatalf("concurrent creates at a limit of 5 with 1 running: %d made, %d refused", made, refused)
	}

	// B's task while B lives (C starts), then after B died (A follows).
	onB, err := b.Create(ctx, Spec{Owner: bob, Server: "db", Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := New(open("c"), Options{}).Recover(ctx, func(Task) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(failed) != 0 {
		t.Errorf("C's Recover at start failed %d tasks of live instances", len(failed))
	}
	stB.Close() // B dies
	failed, err = a.RecoverDead(ctx, func(Task) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range failed {
		if f.Instance != "b" {
			t.Errorf("RecoverDead failed %s of %s", f.ID, f.Instance)
		}
	}
	if got, _ := a.Get(ctx, bob, onB.ID); got.Status != Failed || got.Error.Code != CodeUnknownOutcome {
		t.Errorf("B's task after B died: %+v", got)
	}
	if got, _ := a.Get(ctx, alice, tk.ID); got.Status != Working {
		t.Errorf("A's own task after A's RecoverDead: %s", got.Status)
	}
}

// A task's answers and result are sealed in PostgreSQL: a dump of the
// database alone (without the storeKey) holds neither what the client
// answered nor what the tool returned, while every instance reads both.
func TestAnswersAndResultsAreSealedInPostgres(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t, pgtest.Options{})
	open := func(instance string) *Tasks {
		st, err := store.Open(ctx, store.Options{URL: pg.URL(), Key: storetest.Key, Instance: instance})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return New(st, Options{})
	}
	a, b := open("a"), open("b")
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// dumped fails the test if any row of the store holds text.
	dumped := func(when, text string) {
		t.Helper()
		rows, err := conn.Query(ctx, `select bucket, key, value from warden_kv`)
		if err != nil {
			t.Fatal(err)
		}
		bks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([3][]byte, error) {
			var bk [3][]byte
			return bk, r.Scan(&bk[0], &bk[1], &bk[2])
		})
		if err != nil {
			t.Fatal(err)
		}
		tasks := 0
		for _, bk := range bks {
			if bytes.Contains(bytes.Join(bk[:], nil), []byte(text)) {
				t.Errorf("%s: the row %s/%q holds %q in plaintext", when, bk[0], bk[1], text)
			}
			if string(bk[0]) == taskBucket {
				tasks++
			}
		}
		if tasks != 1 {
			t.Fatalf("%s: %d task rows; want the task's one (the dump would prove nothing)", when, tasks)
		}
	}

	tk, err := a.Create(ctx, Spec{Owner: alice, Server: "fs", Tool: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := a.Ask(ctx, tk.ID, raw(`{"method":"elicitation/create"}`))
	if err != nil {
		t.Fatal(err)
	}
	const answer, result = "typed-by-a-person-4711", "the-tool-output-0815"
	if _, err := b.Answer(ctx, alice, tk.ID, map[string]json.RawMessage{keys[0]: raw(`{"action":"accept","content":{"pin":"` + answer + `"}}`)}); err != nil {
		t.Fatal(err)
	}
	dumped("after the answer", answer)
	if got, err := a.Get(ctx, alice, tk.ID); err != nil || !bytes.Contains(got.Answers[keys[0]], []byte(answer)) {
		t.Fatalf("the other instance reads the answer as %s (%v)", got.Answers[keys[0]], err)
	}
	if _, err := a.Complete(ctx, tk.ID, raw(`{"content":[{"type":"text","text":"`+result+`"}]}`)); err != nil {
		t.Fatal(err)
	}
	dumped("after the result", result)
	dumped("after the result", answer)
	if got, err := b.Get(ctx, alice, tk.ID); err != nil || got.Status != Completed || !bytes.Contains(got.Result, []byte(result)) {
		t.Fatalf("the other instance reads the task as %+v (%v)", got, err)
	}
}

// An expired task handed to its upstream is handed on as unfinished, and
// swept, only by the instance that handed it, or once that instance is
// gone: each instance asks its own upstreams.
func TestSweepHandedByInstance(t *testing.T) {
	ctx := context.Background()
	open := sharedStores(t)
	var mu sync.Mutex
	now := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a, stB := open("a"), open("b")
	tsA := New(a, Options{Retention: time.Hour, Now: clock})
	tsB := New(stB, Options{Retention: time.Hour, Now: clock})
	tk := create(t, tsA, alice, "fs")
	if _, err := tsA.Handed(ctx, tk.ID, "up-1"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if _, err := tsB.Sweep(ctx, noneUnfinished(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := tsB.Get(ctx, alice, tk.ID); err != nil {
		t.Fatalf("b swept a's handed task while a lives: %v", err)
	}
	a.Close() // a is gone
	var handed []string
	if _, err := tsB.Sweep(ctx, func(_ context.Context, u Task) error { handed = append(handed, u.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(handed) != 1 || handed[0] != tk.ID {
		t.Fatalf("b handed on %q once a was gone; want %s", handed, tk.ID)
	}
	if _, err := tsB.Get(ctx, alice, tk.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a gone, its expired handed task: %v; want it swept", err)
	}
}
