package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

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
