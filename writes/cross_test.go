package writes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/storefault"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/store/storetest"
)

// shared opens handles on one PostgreSQL database, each a Warden
// instance, closed at the test's end unless closed before with kill.
func shared(t *testing.T) (open func(name string) store.Store, kill func(store.Store), pg *pgtest.Server) {
	t.Helper()
	pg = pgtest.Start(t, pgtest.Options{})
	url := pg.NewDatabase(t)
	var mu sync.Mutex
	closed := map[store.Store]bool{}
	kill = func(st store.Store) {
		mu.Lock()
		defer mu.Unlock()
		if !closed[st] {
			closed[st] = true
			st.Close()
		}
	}
	return func(name string) store.Store {
		st, err := store.Open(context.Background(), store.Options{URL: url, Key: storetest.Key, Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { kill(st) })
		return st
	}, kill, pg
}

func openLedger(t *testing.T, st store.Store) *Ledger {
	t.Helper()
	l, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// changes signals each change a ledger's observers see for server.
func changes(l *Ledger, server string) <-chan bool {
	ch := make(chan bool, 64)
	l.OnChange(func(s string, latched bool) {
		if s == server {
			ch <- latched
		}
	})
	return ch
}

// wait returns the next change, failing the test if none comes (a bound
// against a hang, not a measure: the events take milliseconds).
func wait(t *testing.T, ch <-chan bool) bool {
	t.Helper()
	select {
	case latched := <-ch:
		return latched
	case <-time.After(30 * time.Second):
		t.Fatal("no change came")
		return false
	}
}

// latchWhileDown begins a call on l, cuts l's store off (cut) and records
// the call's unknown outcome, which l cannot store: it keeps it in memory.
// It answers the call's intent.
func latchWhileDown(t *testing.T, l *Ledger, cut func()) *Intent {
	t.Helper()
	in, err := l.Begin(t.Context(), Latch{Server: "s", Tool: "w"})
	if err != nil {
		t.Fatal(err)
	}
	cut()
	if err := l.Record(Latch{Server: "s", Tool: "w", Reason: ReasonTimeout}, in); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Record with the store cut off: %v", err)
	}
	return in
}

// stop is latchWhileDown's cut for PostgreSQL itself.
func stop(t *testing.T, pg *pgtest.Server) func() { return func() { pg.Stop(t) } }

// waitAlive waits until st sees instance alive.
func waitAlive(t *testing.T, st store.Store, instance string) {
	t.Helper()
	testenv.WaitFor(t, time.Minute, instance+" to be alive", func() bool {
		var alive bool
		err := st.View(t.Context(), func(tx store.Tx) (err error) { alive, err = tx.Alive(instance); return err })
		return err == nil && alive
	})
}

// A latch recorded on instance A refuses the next admission on B, even
// before B's memory has heard of it; B then follows it (Admit refuses), and
// a clear on B lifts it on A.
func TestLatchAcrossInstances(t *testing.T) {
	ctx := t.Context()
	open, _, _ := shared(t)
	a, b := openLedger(t, open("a")), openLedger(t, open("b"))
	bChanges, aChanges := changes(b, "s"), changes(a, "s")

	in, err := a.Begin(ctx, Latch{Server: "s", Tool: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Record(Latch{Server: "s", Tool: "w", Reason: ReasonTimeout}, in); err != nil {
		t.Fatal(err)
	}
	// B's admission reads the store, not its memory.
	var latched *LatchedError
	if _, err := b.Begin(ctx, Latch{Server: "s", Tool: "w2"}); !errors.As(err, &latched) || latched.Latch.Tool != "w" {
		t.Fatalf("B's admission after A recorded: %v; want refused with A's latch", err)
	}
	if !wait(t, bChanges) {
		t.Fatal("B heard of a clear, not of A's latch")
	}
	if _, lt := b.Admit("s"); lt == nil || lt.Reason != ReasonTimeout {
		t.Fatalf("B's Admit after it heard: %+v; want refused", lt)
	}

	if ls, err := b.Clear("s", "test"); err != nil || len(ls) != 1 {
		t.Fatalf("Clear on B: %+v, %v", ls, err)
	}
	wait(t, aChanges) // A's own Record
	if wait(t, aChanges) {
		t.Fatal("A heard of a latch, not of B's clear")
	}
	p, lt := a.Admit("s")
	if lt != nil {
		t.Fatalf("A's Admit after the clear: %+v", lt)
	}
	p.Release()
	if _, err := a.Begin(ctx, Latch{Server: "s", Tool: "w3"}); err != nil {
		t.Fatalf("A's admission after the clear: %v", err)
	}
}

// A call in flight on an instance that died (its store closed without the
// call struck off, as kill -9 leaves it) latches its server at the next
// admission on another instance, which is refused.
func TestDeadInstanceLatchesAtTheNextAdmission(t *testing.T) {
	ctx := t.Context()
	open, kill, _ := shared(t)
	stA := open("a")
	a := openLedger(t, stA)
	if _, err := a.Begin(ctx, Latch{Server: "s", Tool: "w", ArgsSHA256: "aa"}); err != nil {
		t.Fatal(err)
	}
	b := openLedger(t, open("b"))
	if _, err := b.Begin(ctx, Latch{Server: "s", Tool: "x"}); err != nil {
		t.Fatalf("B's admission while A lives: %v; want admitted (A's call is in flight)", err)
	}
	kill(stA) // A dies: its call's outcome is unknown

	var latched *LatchedError
	_, err := b.Begin(ctx, Latch{Server: "s", Tool: "y"})
	if !errors.As(err, &latched) || latched.Latch.Tool != "w" || latched.Latch.ArgsSHA256 != "aa" || latched.Latch.Reason != ReasonInterrupted {
		t.Fatalf("B's admission after A died: %v; want refused with A's call, interrupted", err)
	}
	// B's own call in flight is not taken for a dead one's.
	c := openLedger(t, open("c"))
	if got := c.List(); len(got) != 1 || got[0].Tool != "w" {
		t.Fatalf("latches %+v; want only A's call", got)
	}
}

// Records on two instances at once each add their latch: the server's lock
// makes each read-modify-write whole. Without it (read committed), one
// instance's write overwrites the other's and latches are lost.
func TestConcurrentRecordsKeepEveryLatch(t *testing.T) {
	open, _, _ := shared(t)
	ls := []*Ledger{openLedger(t, open("a")), openLedger(t, open("b"))}
	const n = 50
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range n {
				if err := l.Record(Latch{Server: "s", Tool: fmt.Sprintf("%d-%d", i, j), Reason: ReasonTimeout}, nil); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if got := openLedger(t, open("c")).List(); len(got) != 2*n {
		t.Fatalf("%d latches stored, want %d", len(got), 2*n)
	}
}

// With PostgreSQL down, admissions fail with store.ErrUnavailable and a
// latch recorded is kept in memory; once PostgreSQL is back, A stores it
// (as it rejoins), and the other instance follows it and refuses.
func TestLatchRecordedWhilePostgresIsDown(t *testing.T) {
	ctx := t.Context()
	open, _, pg := shared(t)
	a, b := openLedger(t, open("a")), openLedger(t, open("b"))
	latchWhileDown(t, a, stop(t, pg))
	if _, err := b.Begin(ctx, Latch{Server: "s", Tool: "x"}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("B's admission with PostgreSQL down: %v", err)
	}
	pg.Start(t)
	testenv.WaitFor(t, time.Minute, "A's latch to reach B", func() bool {
		_, latched := b.Check("s")
		return latched
	})
	var latched *LatchedError
	if _, err := b.Begin(ctx, Latch{Server: "s", Tool: "x"}); !errors.As(err, &latched) || latched.Latch.Reason != ReasonTimeout {
		t.Fatalf("B's admission once PostgreSQL is back: %v; want refused with A's latch", err)
	}
	if got := a.List(); len(got) != 1 {
		t.Fatalf("A's latches %+v; want the one, stored once", got)
	}
}

// A latch A recorded while PostgreSQL was down is stored before any
// instance can see A alive again: until then A's call written down would
// read as a call in flight on a live instance, and B would admit a write to
// the latched server. B tries admissions from the moment it sees A alive,
// while A's watchers have not yet heard the store's Resync (a watcher holds
// A's events), and is never admitted.
func TestNoAdmissionBeforeAnUnsavedLatchIsStored(t *testing.T) {
	ctx := t.Context()
	open, _, pg := shared(t)
	stA, stB := open("a"), open("b")
	a, b := openLedger(t, stA), openLedger(t, stB)
	// Hold A's events from the first on topic "hold" until the test ends.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	stA.Watch("hold", func(store.Event) { once.Do(func() { close(held); <-release }) })
	t.Cleanup(func() { close(release) })
	if err := stA.Update(ctx, func(tx store.Tx) error { return tx.Publish("hold", []byte("x")) }); err != nil {
		t.Fatal(err)
	}
	<-held

	latchWhileDown(t, a, stop(t, pg))
	pg.Start(t)
	waitAlive(t, stB, "a")
	for i := range 20 {
		var latched *LatchedError
		if _, err := b.Begin(ctx, Latch{Server: "s", Tool: "x"}); !errors.As(err, &latched) || latched.Latch.Reason != ReasonTimeout {
			t.Fatalf("B's admission %d once A is alive again: %v; want refused with A's latch", i, err)
		}
	}
}

// RecoverDead latches the calls a dead instance left in flight without any
// admission, at once in this ledger's list; it leaves calls of live
// instances, its own included, alone, and latches a call once.
func TestRecoverDeadLatchesWithoutAnAdmission(t *testing.T) {
	ctx := t.Context()
	open, kill, _ := shared(t)
	stA := open("a")
	a, b := openLedger(t, stA), openLedger(t, open("b"))
	if _, err := a.Begin(ctx, Latch{Server: "s", Tool: "w", ArgsSHA256: "aa"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Begin(ctx, Latch{Server: "s", Tool: "x"}); err != nil {
		t.Fatal(err)
	}
	if servers, err := b.RecoverDead(ctx); err != nil || len(servers) != 0 || len(b.List()) != 0 {
		t.Fatalf("RecoverDead while A lives: %v, %v, latches %+v; want none", servers, err, b.List())
	}
	kill(stA) // A dies: its call's outcome is unknown

	if servers, err := b.RecoverDead(ctx); err != nil || !slices.Equal(servers, []string{"s"}) {
		t.Fatalf("RecoverDead after A died: %v, %v; want s latched", servers, err)
	}
	if got := b.List(); len(got) != 1 || got[0].Tool != "w" || got[0].ArgsSHA256 != "aa" || got[0].Reason != ReasonInterrupted {
		t.Fatalf("B's latches %+v; want A's call, interrupted", got)
	}
	if servers, err := b.RecoverDead(ctx); err != nil || len(servers) != 0 || len(openLedger(t, open("c")).List()) != 1 {
		t.Fatalf("RecoverDead again: %v, %v; want nothing more latched", servers, err)
	}
}

// A call that ended while PostgreSQL was down is struck off before its
// instance is seen alive again, so that no instance (nor its next start)
// takes it for a call in flight.
func TestCallEndedWhilePostgresIsDownIsStruckOff(t *testing.T) {
	ctx := t.Context()
	open, _, pg := shared(t)
	st := open("a")
	a := openLedger(t, st)
	in, err := a.Begin(ctx, Latch{Server: "s", Tool: "w"})
	if err != nil {
		t.Fatal(err)
	}
	pg.Stop(t)
	in.End()
	a.ending.Wait() // the strike-off failed
	pg.Start(t)
	waitAlive(t, st, "a")
	var left int
	if err := st.View(ctx, func(tx store.Tx) (err error) { left, err = tx.Count(intentBucket); return err }); err != nil || left != 0 {
		t.Fatalf("calls written down once A is alive again: %d, %v; want the ended call struck off", left, err)
	}
}

// A call whose latch Record could not store stays written down when it
// ends, until its latch is stored: were it struck off once PostgreSQL is
// back but before A rejoined (held here), B would see a dead instance with
// neither the call nor the latch, and admit a write to the latched server.
func TestEndKeepsTheCallOfAnUnsavedLatch(t *testing.T) {
	ctx := t.Context()
	open, _, pg := shared(t)
	stA := open("a")
	release := make(chan struct{})
	stA.OnRejoin(func(ctx context.Context) error { // before the ledger's: A stays not alive
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	t.Cleanup(func() { close(release) })
	stB := open("b")
	a, b := openLedger(t, stA), openLedger(t, stB)
	in := latchWhileDown(t, a, stop(t, pg))
	pg.Start(t)
	waitAlive(t, stB, "b")
	testenv.WaitFor(t, time.Minute, "A's store to answer again", func() bool {
		return stA.Update(ctx, func(tx store.Tx) error { return nil }) == nil
	})
	in.End()
	a.ending.Wait()
	var latched *LatchedError
	if _, err := b.Begin(ctx, Latch{Server: "s", Tool: "x"}); !errors.As(err, &latched) {
		t.Fatalf("B's admission while A's latch is not stored: %v; want refused", err)
	}
}

// A latch whose commit failed while A never lost PostgreSQL (its listener
// held on: no rejoin comes) is stored by A's next sweep, RecoverDead; until
// then B, seeing A alive with the call in flight, admits writes.
func TestSweepStoresALatchWhoseCommitFailed(t *testing.T) {
	ctx := t.Context()
	open, _, _ := shared(t)
	stA := storefault.Wrap(open("a"))
	a, b := openLedger(t, stA), openLedger(t, open("b"))
	in := latchWhileDown(t, a, func() { stA.Down(true) })
	in.End()
	a.ending.Wait()
	stA.Down(false)
	if _, err := a.RecoverDead(ctx); err != nil {
		t.Fatal(err)
	}
	var latched *LatchedError
	if _, err := b.Begin(ctx, Latch{Server: "s", Tool: "x"}); !errors.As(err, &latched) || latched.Latch.Reason != ReasonTimeout {
		t.Fatalf("B's admission after A's sweep: %v; want refused with A's latch", err)
	}
	if got := a.List(); len(got) != 1 {
		t.Fatalf("A's latches %+v; want the one", got)
	}
}
