package tasks

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A task handed to its upstream leaves the limits' count and is left be
// by Recover (it runs upstream, not in Warden); it stays for its TTL
// after its client last reached it (Renew, which writes at most once a
// tenth of the TTL), then is swept; only its
// owner renews it; a task cancelled before its upstream took it refuses
// the handing, so the upstream's task can be cancelled.
func TestHanded(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	path := filepath.Join(t.TempDir(), "warden.db")
	st := openBolt(t, path, "first")
	ts := New(st, Options{MaxPerServer: 1, Retention: time.Hour, Now: clock})

	tk := create(t, ts, alice, "fs")
	if _, err := ts.Create(ctx, Spec{Owner: bob, Server: "fs", Tool: "t"}); err == nil {
		t.Fatal("a second task of fs while the first runs here")
	}
	got, err := ts.Handed(ctx, tk.ID, "up-1")
	if err != nil || got.Upstream != "up-1" || got.Status != Working {
		t.Fatalf("Handed: %+v, %v", got, err)
	}
	create(t, ts, bob, "fs") // the handed task no longer counts

	st.Close()
	st = openBolt(t, path, "second")
	ts = New(st, Options{Retention: time.Hour, Now: clock})
	failed, err := ts.Recover(ctx, func(Task) error { return nil })
	if err != nil || len(failed) != 1 || failed[0].Owner != bob {
		t.Fatalf("Recover failed %+v, %v; want bob's task alone", failed, err)
	}
	if got, _ := ts.Get(ctx, alice, tk.ID); got.Status != Working || got.Upstream != "up-1" {
		t.Fatalf("a handed task after Recover: %+v", got)
	}

	advance(5 * time.Minute) // within a tenth of the TTL: no write
	if err := ts.Renew(ctx, alice, got); err != nil {
		t.Fatal(err)
	}
	if again, _ := ts.Get(ctx, alice, tk.ID); !again.UpdatedAt.Equal(got.UpdatedAt) {
		t.Fatalf("a renewal within a tenth of the TTL wrote the task: %v, was %v", again.UpdatedAt, got.UpdatedAt)
	}
	advance(45 * time.Minute)
	if err := ts.Renew(ctx, bob, got); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob renewed alice's task: %v", err)
	}
	if err := ts.Renew(ctx, alice, got); err != nil {
		t.Fatal(err)
	}
	advance(50 * time.Minute) // 100 minutes after the handing, 50 after the renewal
	if _, err := ts.Sweep(ctx, noneUnfinished(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Get(ctx, alice, tk.ID); err != nil {
		t.Fatalf("a renewed handed task was swept: %v", err)
	}
	// An hour after its renewal it is swept, once its unfinished run (its
	// outcome never learnt) was handed on: not while that fails.
	advance(10 * time.Minute)
	var unfinished []string
	refuse := errors.New("the store is down")
	for _, err := range []error{refuse, nil} {
		_, got := ts.Sweep(ctx, func(_ context.Context, u Task) error {
			unfinished = append(unfinished, u.ID+" "+u.Upstream)
			return err
		})
		if !errors.Is(got, err) {
			t.Fatalf("Sweep: %v, want %v", got, err)
		}
		if _, gerr := ts.Get(ctx, alice, tk.ID); (gerr == nil) != (err != nil) {
			t.Fatalf("unfinished answered %v: the task is there: %v", err, gerr == nil)
		}
	}
	if want := tk.ID + " up-1"; len(unfinished) != 2 || unfinished[0] != want || unfinished[1] != want {
		t.Fatalf("handed on as unfinished: %q, want %q twice", unfinished, want)
	}

	// One its upstream was seen to finish is swept without a word.
	done := create(t, ts, alice, "fs")
	if _, err := ts.Handed(ctx, done.ID, "up-3"); err != nil {
		t.Fatal(err)
	}
	if err := ts.UpstreamFinished(ctx, bob, done.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob marked alice's task: %v", err)
	}
	if err := ts.UpstreamFinished(ctx, alice, done.ID); err != nil {
		t.Fatal(err)
	}
	advance(2 * time.Hour)
	if _, err := ts.Sweep(ctx, noneUnfinished(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Get(ctx, alice, done.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a handed task its upstream finished, expired: %v; want it swept", err)
	}

	gone := create(t, ts, alice, "db")
	if _, err := ts.Cancel(ctx, alice, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Handed(ctx, gone.ID, "up-2"); !errors.Is(err, ErrFinished) {
		t.Fatalf("Handed after a cancel: %v; want ErrFinished", err)
	}
}

// noneUnfinished is Sweep's unfinished for tests where no expired task may
// be one.
func noneUnfinished(t *testing.T) func(context.Context, Task) error {
	return func(_ context.Context, u Task) error {
		t.Errorf("task %s handed on as unfinished", u.ID)
		return nil
	}
}
