package instances

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens an embedded store for the instance of that name.
func open(t *testing.T, instance string) store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db"), Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// An instance is listed from its start, gone once unseen for GoneAfter,
// and no longer listed after a clean stop.
func TestHeartbeat(t *testing.T) {
	ctx := t.Context()
	st := open(t, "host:7373")
	h, err := Start(ctx, st, Instance{ID: "host:7373", Listen: "127.0.0.1:7373", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := List(ctx, st, time.Now())
	if err != nil || len(got) != 1 {
		t.Fatalf("List = %+v, %v", got, err)
	}
	if i := got[0]; i.ID != "host:7373" || i.Run == "" || i.Listen != "127.0.0.1:7373" || i.Version != "v1" ||
		i.Started.IsZero() || i.LastSeen.Before(i.Started) || i.Gone {
		t.Fatalf("the record: %+v", i)
	}
	if later, _ := List(ctx, st, got[0].LastSeen.Add(GoneAfter+time.Second)); len(later) != 1 || !later[0].Gone {
		t.Fatalf("unseen for longer than GoneAfter: %+v, want gone", later)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := List(ctx, st, time.Now()); err != nil || len(got) != 0 {
		t.Fatalf("after a clean stop: %+v, %v", got, err)
	}
}

// A stop leaves the record of a later run of the same ID (one that
// restarted while this one was hung) in place.
func TestStopLeavesALaterRun(t *testing.T) {
	ctx := t.Context()
	st := open(t, "a")
	h, err := Start(ctx, st, Instance{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, func(tx store.Tx) error {
		return tx.Put(bucket, []byte("a"), []byte(`{"id":"a","run":"run-2"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := List(ctx, st, time.Now()); len(got) != 1 || got[0].Run != "run-2" {
		t.Fatalf("List = %+v, want run-2's record", got)
	}
}

// On a shared store an instance that dies without stopping (its store
// closed, as the process' end closes it) is gone at once for the others,
// though its record is fresh.
func TestDeadInstanceGoneAtOnce(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Start(t, pgtest.Options{}).URL()
	openPG := func(name string) store.Store {
		st, err := store.Open(ctx, store.Options{URL: url, Key: "the instances test's store key", Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, b := openPG("a"), openPG("b")
	for _, st := range []store.Store{a, b} {
		h, err := Start(ctx, st, Instance{ID: st.Instance()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Stop(ctx) }) // a's fails: its store is closed

	}
	gone := func() map[string]bool {
		got, err := List(ctx, b, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, i := range got {
			m[i.ID] = i.Gone
		}
		return m
	}
	if g := gone(); len(g) != 2 || g["a"] || g["b"] {
		t.Fatalf("both running: gone = %v", g)
	}
	a.Close() // a dies: its heartbeat stops with no clean Stop
	if g := gone(); len(g) != 2 || !g["a"] || g["b"] {
		t.Fatalf("a died: gone = %v; want a gone at once, its record kept", g)
	}
}

// Live lists the recorded instances whose process holds its liveness lock
// (in the embedded store, the one that opened it), not those whose record
// a process that died left behind.
func TestLive(t *testing.T) {
	ctx := t.Context()
	st := open(t, "running")
	for _, id := range []string{"died", "running"} {
		h, err := Start(ctx, st, Instance{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Stop(ctx)
	}
	got, err := Live(ctx, st)
	if err != nil || len(got) != 1 || got[0].ID != "running" {
		t.Fatalf("Live = %+v, %v; want the running instance alone", got, err)
	}
}
