package activity

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/store"
)

// openOnPostgres starts a cluster and opens a log on it.
func openOnPostgres(t *testing.T, maxEntries int, o options) (*Log, *pgtest.Server) {
	t.Helper()
	pg := pgtest.Start(t, pgtest.Options{})
	st, err := store.Open(context.Background(), store.Options{URL: pg.URL(), Key: "a test key, not a secret", Instance: "a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return mustOpen(t, st, maxEntries, time.Hour, o), pg
}

// tools answers the tools of the entries in the log, oldest first.
func tools(t *testing.T, l *Log) []string {
	t.Helper()
	es := query(t, l, "", 0)
	out := make([]string, len(es))
	for i, e := range es {
		out[len(es)-1-i] = e.Tool
	}
	return out
}

func TestEntriesOfAnOutageAreStoredWhenPostgresIsBack(t *testing.T) {
	l, pg := openOnPostgres(t, 1000, options{})
	base := time.Now().Round(0)
	add := func(from, to int) {
		for i := from; i < to; i++ {
			l.Add(Entry{At: base.Add(time.Duration(i) * time.Millisecond), Server: "s", Tool: fmt.Sprint(i), Outcome: OutcomeOK})
		}
		l.Flush()
	}
	add(0, 2)
	pg.Stop(t)
	// Three batches while it is down: each fails, each after the first
	// retries the ones held before it.
	add(2, 5)
	add(5, 6)
	add(6, 9)
	if l.WriteErrors() != 0 || l.Lost() != 0 {
		t.Fatalf("while down: %d write errors, %d lost; want the entries held", l.WriteErrors(), l.Lost())
	}
	pg.Start(t)
	// No call after: the store's Resync alone stores them.
	testenv.WaitFor(t, time.Minute, "the held entries to be stored", func() bool {
		es, err := l.Query(Filter{}, 0)
		return err == nil && len(es) >= 9
	})
	add(9, 10)
	want := strings.Fields("0 1 2 3 4 5 6 7 8 9")
	got := tools(t, l)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the log holds %v; want %v, each once, in order", got, want)
	}
	for _, e := range query(t, l, "", 0) {
		var i int
		fmt.Sscan(e.Tool, &i)
		if at := base.Add(time.Duration(i) * time.Millisecond); !e.At.Equal(at) {
			t.Errorf("entry %s at %v; want its own time %v", e.Tool, e.At, at)
		}
	}
}

func TestOutageKeepsABoundedNumberOfEntries(t *testing.T) {
	// Each entry here is stored in about 150 bytes: 1000 keep six.
	l, pg := openOnPostgres(t, 1000, options{heldBytes: 1000})
	base := time.Now().Round(0)
	pg.Stop(t)
	for i := range 20 {
		l.Add(Entry{At: base.Add(time.Duration(i) * time.Millisecond), Server: "s", Tool: fmt.Sprint(i), Outcome: OutcomeOK})
		l.Flush()
	}
	if l.held.bytes > 1000 {
		t.Fatalf("held %d bytes; want at most 1000", l.held.bytes)
	}
	kept := len(l.held.recs)
	if kept == 0 || kept == 20 || l.Lost() != uint64(20-kept) {
		t.Fatalf("kept %d, lost %d of 20; want the bound to drop some and count them", kept, l.Lost())
	}
	pg.Start(t)
	testenv.WaitFor(t, time.Minute, "the held entries to be stored", func() bool {
		es, err := l.Query(Filter{}, 0)
		return err == nil && len(es) > 0
	})
	es := query(t, l, "", 0)
	if len(es) != kept+1 {
		t.Fatalf("the log holds %d entries; want the %d kept and one saying what was lost", len(es), kept)
	}
	marker := es[len(es)-1] // the oldest: it stands where the gap starts
	if marker.Outcome != OutcomeLost || marker.Code != "STORE_UNAVAILABLE" || !marker.At.Equal(base) ||
		!strings.HasPrefix(marker.Error, fmt.Sprintf("%d entries ", 20-kept)) {
		t.Fatalf("oldest entry %+v; want one at the first lost entry's time saying %d were lost", marker, 20-kept)
	}
	for i, e := range es[:kept] { // the newest were kept
		if want := fmt.Sprint(19 - i); e.Tool != want {
			t.Fatalf("entry %d is %q; want %q: the newest entries are the ones kept", i, e.Tool, want)
		}
	}
}

// lostCommit is a store whose next Update commits and then reports the
// store unreachable, as a commit whose answer the connection lost does.
type lostCommit struct {
	store.Store
	once bool
}

func (s *lostCommit) Update(ctx context.Context, fn func(store.Tx) error) error {
	err := s.Store.Update(ctx, fn)
	if err == nil && !s.once {
		s.once = true
		return fmt.Errorf("%w: the connection closed during the commit", store.ErrUnavailable)
	}
	return err
}

func TestEntriesOfACommitOfUnknownOutcomeAreStoredOnce(t *testing.T) {
	db, _ := openDB(t)
	st := &lostCommit{Store: db, once: true} // Open's own transaction goes through
	l := mustOpen(t, st, 1000, time.Hour, options{})
	st.once = false // the writer's goroutine is idle: nothing reads it now
	l.Add(Entry{Server: "s", Tool: "0"})
	l.Add(Entry{Server: "s", Tool: "1"})
	l.Flush() // committed, reported unreachable: held
	l.Add(Entry{Server: "s", Tool: "2"})
	l.Flush() // stores the held ones again, and 2
	if got := strings.Join(tools(t, l), " "); got != "0 1 2" {
		t.Fatalf("the log holds %q; want \"0 1 2\", each once", got)
	}
}
