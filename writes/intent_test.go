package writes

import (
	"bytes"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/storefault"
	"github.com/wardenmcp/warden/store"
)

// A call written down and never struck off (Warden died mid-call) latches
// its server at the next open, with the call's tool and argument hash; one
// struck off leaves nothing; a server already latched gets the call as one
// more latch (a call admitted before the latch); Begin refuses a latched
// server.
func TestIntentsLatchAfterACrash(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "w.db")
	db := openDB(t, path)
	l, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	done, err := l.Begin(ctx, Latch{Server: "finished", Tool: "w", ArgsSHA256: "aa", Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	done.End()
	if _, err := l.Begin(ctx, Latch{Server: "crashed", Tool: "w", ArgsSHA256: "bb", Surface: "mcp/crashed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Begin(ctx, Latch{Server: "latched", Tool: "second"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(Latch{Server: "latched", Tool: "first", Reason: ReasonTimeout}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Begin(ctx, Latch{Server: "latched", Tool: "third"}); !errors.As(err, new(*LatchedError)) {
		t.Fatalf("Begin on a latched server: %v, want refused", err)
	}
	if _, err := l.Begin(ctx, Latch{Server: "garbled", Tool: "w"}); err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(tx store.Tx) error { // a record that cannot be read back
		var key []byte
		err := tx.Scan(intentBucket, []byte("garbled\x00"), false, func(k, _ []byte) error {
			key = bytes.Clone(k)
			return store.ErrStop
		})
		if err != nil {
			return err
		}
		return tx.Put(intentBucket, key, []byte("not json"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, latched := l.Check("crashed"); latched {
		t.Fatal("a call in flight latched before anything went wrong")
	}
	l.Close() // waits for the struck-off call
	db.Close()

	for range 2 { // and the recovery is done once: a second open changes nothing
		db = openDB(t, path)
		l, err = Open(db)
		if err != nil {
			t.Fatal(err)
		}
		got := l.List()
		if len(got) != 4 {
			t.Fatalf("latches %+v, want crashed, garbled and latched twice", got)
		}
		if c := got[0]; c.Server != "crashed" || c.Tool != "w" || c.ArgsSHA256 != "bb" || c.Reason != ReasonInterrupted ||
			c.Surface != "mcp/crashed" || time.Since(c.At) > time.Minute {
			t.Fatalf("crashed: %+v", c)
		}
		if c := got[1]; c.Server != "garbled" || c.Reason != ReasonInterrupted {
			t.Fatalf("garbled: %+v", c)
		}
		if c := got[2]; c.Server != "latched" || c.Tool != "first" || c.Reason != ReasonTimeout {
			t.Fatalf("latched: %+v", c)
		}
		if c := got[3]; c.Server != "latched" || c.Tool != "second" || c.Reason != ReasonInterrupted {
			t.Fatalf("latched, second: %+v", c)
		}
		l.Close()
		db.Close()
	}
}

// The cost a write call pays before it is sent: one committed transaction.
//
//	go test -run '^$' -bench BenchmarkBegin ./writes/
func BenchmarkBegin(b *testing.B) {
	ctx := b.Context()
	db := openDB(b, filepath.Join(b.TempDir(), "w.db"))
	defer db.Close()
	l, err := Open(db)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for b.Loop() {
		in, err := l.Begin(ctx, Latch{Server: "s", Tool: "w", ArgsSHA256: "aa"})
		if err != nil {
			b.Fatal(err)
		}
		in.End()
	}
}

// A call latched as unknown is struck off in the latch's own commit: a crash
// right after Record (before End) does not latch it a second time.
func TestRecordStrikesTheIntentOff(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "w.db")
	db := openDB(t, path)
	l, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	call := Latch{Server: "s", Tool: "w", ArgsSHA256: "aa", Surface: "mcp"}
	in, err := l.Begin(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	call.Reason = ReasonTimeout
	if err := l.Record(call, in); err != nil {
		t.Fatal(err)
	}
	db.Close() // "crash": End never ran

	db = openDB(t, path)
	defer db.Close()
	if l, err = Open(db); err != nil {
		t.Fatal(err)
	}
	if got := l.List(); len(got) != 1 || got[0].Reason != ReasonTimeout {
		t.Fatalf("latches %+v, want the one timeout", got)
	}
}

// A latch recorded while the store cannot be reached latches in memory
// (fail closed), Begin and Clear refuse with store.ErrUnavailable, and once
// the store is back (its Resync) the latch is stored, the call's intent with
// it: a restart then finds the one latch.
func TestRecordWhileTheStoreIsDown(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "w.db")
	st := storefault.Wrap(openDB(t, path))
	l, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	latchWhileDown(t, l, func() { st.Down(true) })
	if _, lt := l.Admit("s"); lt == nil {
		t.Fatal("not latched in memory")
	}
	if _, err := l.Begin(ctx, Latch{Server: "t", Tool: "w"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Begin with the store down: %v", err)
	}
	if _, err := l.Clear("s", "test"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Clear with the store down: %v", err)
	}
	if _, lt := l.Admit("s"); lt == nil {
		t.Fatal("a failed Clear lifted the latch")
	}
	st.Down(false)
	l.changed(store.Event{Topic: topic, Resync: true}) // what the store sends once it is back
	l.Close()
	st.Close()

	st2 := openDB(t, path)
	defer st2.Close()
	l, err = Open(st2)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.List(); len(got) != 1 || got[0].Reason != ReasonTimeout {
		t.Fatalf("after a restart: %+v; want the one timeout (stored, its intent struck off)", got)
	}
}

// Flushes may run at once (the daemon's sweep, a rejoin): each strikes
// off the ended calls once, and what ends meanwhile waits for the next.
func TestConcurrentFlushes(t *testing.T) {
	ctx := t.Context()
	st := storefault.Wrap(openDB(t, filepath.Join(t.TempDir(), "w.db")))
	defer st.Close()
	l, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for round := range 20 {
		var ins []*Intent
		for range 3 {
			in, err := l.Begin(ctx, Latch{Server: "s", Tool: "w"})
			if err != nil {
				t.Fatal(err)
			}
			ins = append(ins, in)
		}
		st.Down(true)
		for _, in := range ins {
			in.End()
		}
		l.ending.Wait() // each strike-off failed
		st.Down(false)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if err := l.flush(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		var left int
		if err := st.View(ctx, func(tx store.Tx) (err error) { left, err = tx.Count(intentBucket); return err }); err != nil || left != 0 {
			t.Fatalf("round %d: %d calls written down, %v; want none", round, left, err)
		}
		l.endMu.Lock()
		waiting := len(l.ended)
		l.endMu.Unlock()
		if waiting != 0 {
			t.Fatalf("round %d: %d ended calls waiting; want none", round, waiting)
		}
	}
}
