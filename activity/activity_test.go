package activity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
)

func openDB(t testing.TB) (store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := store.Open(t.Context(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func mustOpen(t testing.TB, db store.Store, n int, age time.Duration, o options) *Log {
	t.Helper()
	l, err := open(db, n, age, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func query(t *testing.T, l *Log, server string, limit int) []Entry {
	t.Helper()
	es, err := l.Query(Filter{Server: server}, limit)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestOutcomesRoundTrip(t *testing.T) {
	db, _ := openDB(t)
	l := mustOpen(t, db, 100, time.Hour, options{})
	base := time.Now().Round(0)
	in := []Entry{
		{At: base, Surface: "/mcp", Server: "fs", Tool: "read_file", Class: "read", ArgsSHA256: "aa", Outcome: OutcomeOK, LatencyMicros: 42},
		{At: base.Add(time.Millisecond), Surface: "/mcp/fs", Server: "fs", Tool: "write_file", Class: "write", ArgsSHA256: "bb", Outcome: OutcomeError, LatencyMicros: 7},
		{At: base.Add(2 * time.Millisecond), Surface: "stdio", Server: "fs", Tool: "write_file", Class: "write", ArgsSHA256: "cc", Outcome: OutcomeRefused, Code: "WRITES_LATCHED"},
		{At: base.Add(3 * time.Millisecond), Surface: "/mcp", Server: "fs", Tool: "move_file", Class: "destructive", ArgsSHA256: "dd", Outcome: OutcomeUnknown, LatencyMicros: 60_000_000},
	}
	for _, e := range in {
		l.Add(e)
	}
	l.Flush()
	got := query(t, l, "", 0)
	if len(got) != len(in) {
		t.Fatalf("got %d entries, want %d", len(got), len(in))
	}
	for i, g := range got {
		w := in[len(in)-1-i] // newest first
		w.Instance = db.Instance()
		if !g.At.Equal(w.At) {
			t.Errorf("entry %d At %v, want %v", i, g.At, w.At)
		}
		g.At = w.At
		if !reflect.DeepEqual(g, w) {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestQueryNewestFirstLimitServer(t *testing.T) {
	db, _ := openDB(t)
	l := mustOpen(t, db, 1000, time.Hour, options{})
	base := time.Now()
	for i := range 30 {
		s := []string{"a", "b", "c"}[i%3]
		l.Add(Entry{At: base.Add(time.Duration(i) * time.Millisecond), Server: s, Tool: fmt.Sprint(i), Outcome: OutcomeOK})
	}
	l.Flush()
	got := query(t, l, "b", 4)
	want := []string{"28", "25", "22", "19"}
	if len(got) != len(want) {
		t.Fatalf("got %d, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Server != "b" || got[i].Tool != want[i] {
			t.Errorf("entry %d = %s/%s, want b/%s", i, got[i].Server, got[i].Tool, want[i])
		}
	}
	if all := query(t, l, "", 0); len(all) != 30 || all[0].Tool != "29" || all[29].Tool != "0" {
		t.Fatalf("all: %d entries, first %q", len(all), all[0].Tool)
	}
	if none := query(t, l, "zzz", 10); len(none) != 0 {
		t.Fatalf("unknown server: %d entries", len(none))
	}
}

func TestRetentionByCount(t *testing.T) {
	db, _ := openDB(t)
	l, err := open(db, 10, time.Hour, options{})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now()
	for i := range 25 {
		l.Add(Entry{At: base.Add(time.Duration(i) * time.Millisecond), Server: "s", Tool: fmt.Sprint(i)})
		if i%7 == 0 {
			l.Flush() // several batches
		}
	}
	l.Flush()
	got := query(t, l, "", 0)
	if len(got) != 10 || got[0].Tool != "24" || got[9].Tool != "15" {
		t.Fatalf("kept %d entries, newest %q oldest %q; want 10, 24..15", len(got), got[0].Tool, got[len(got)-1].Tool)
	}
	l.Close()
	// A smaller bound applies at the next Open; sequences continue, so an
	// entry with an existing timestamp does not overwrite one.
	l = mustOpen(t, db, 4, time.Hour, options{})
	if got := query(t, l, "", 0); len(got) != 4 || got[3].Tool != "21" {
		t.Fatalf("after reopen with max 4: %d entries", len(got))
	}
	l.Add(Entry{At: base.Add(24 * time.Millisecond), Server: "s", Tool: "dup-time"})
	l.Flush()
	got = query(t, l, "", 0)
	if len(got) != 4 || got[0].Tool != "dup-time" || got[1].Tool != "24" {
		t.Fatalf("after same-time add: %+v", got)
	}
}

func TestRetentionByAge(t *testing.T) {
	db, _ := openDB(t)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := mustOpen(t, db, 1000, time.Hour, options{now: clock})
	l.Add(Entry{At: now.Add(-2 * time.Hour), Server: "s", Tool: "ancient"})
	l.Add(Entry{At: now.Add(-30 * time.Minute), Server: "s", Tool: "old"})
	l.Add(Entry{At: now, Server: "s", Tool: "new"})
	l.Flush()
	if got := query(t, l, "", 0); len(got) != 2 || got[1].Tool != "old" {
		t.Fatalf("entries older than maxAge kept: %+v", got)
	}
	mu.Lock()
	now = now.Add(45 * time.Minute)
	mu.Unlock()
	l.Add(Entry{At: now, Server: "s", Tool: "newer"})
	l.Flush()
	got := query(t, l, "", 0)
	if len(got) != 2 || got[0].Tool != "newer" || got[1].Tool != "new" {
		t.Fatalf("after the clock moved: %+v", got)
	}
}

func TestAddNeverBlocksWhenWriterStalled(t *testing.T) {
	db, _ := openDB(t)
	entered := make(chan struct{}, 1)
	unstall := make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			entered <- struct{}{}
			<-unstall
		})
	}
	l := mustOpen(t, db, 1000, time.Hour, options{buffer: 8, beforeTx: hook})
	l.Add(Entry{Server: "s", Tool: "first"})
	<-entered // the writer holds "first" and is stalled

	done := make(chan struct{})
	go func() {
		for i := range 100 {
			l.Add(Entry{Server: "s", Tool: fmt.Sprint(i)})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Add blocked while the writer was stalled")
	}
	if d := l.Dropped(); d != 92 {
		t.Fatalf("Dropped = %d, want 92 (100 adds, buffer 8)", d)
	}
	close(unstall)
	l.Flush()
	if got := query(t, l, "", 0); len(got) != 9 {
		t.Fatalf("%d entries written, want 9", len(got))
	}
}

func TestCloseDrainsAndLaterAddsDrop(t *testing.T) {
	db, _ := openDB(t)
	l, err := open(db, 1000, time.Hour, options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		l.Add(Entry{Server: "s", Tool: fmt.Sprint(i)})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l.Add(Entry{Server: "s", Tool: "late"}) // must not panic
	l.Flush()                               // returns at once
	if l.Dropped() != 1 {
		t.Fatalf("Dropped = %d, want 1", l.Dropped())
	}
	if got := query(t, l, "", 0); len(got) != 50 {
		t.Fatalf("Close wrote %d of 50 queued entries", len(got))
	}
	if err := l.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestStoreHoldsOnlyTheHash(t *testing.T) {
	const marker = "MARKER-activity-91c2"
	db, path := openDB(t)
	l := mustOpen(t, db, 1000, time.Hour, options{})
	sum := sha256.Sum256([]byte(`{"content":"` + marker + `"}`))
	h := hex.EncodeToString(sum[:])
	l.Add(Entry{Server: "fs", Tool: "write_file", ArgsSHA256: h, Outcome: OutcomeOK})
	l.Close()
	db.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(marker)) {
		t.Fatal("store contains the marker")
	}
	if !bytes.Contains(raw, []byte(h)) {
		t.Fatal("store lacks the hash: wrong file?")
	}
}

// BenchmarkAdd measures Add as the call path pays it. The store writer's
// throughput is a separate matter (it batches; Dropped counts what it cannot
// absorb), so "queued" stalls the real writer and drains the channel with a
// discarding consumer: the cost of a successful Add, consumer wake-ups
// included. "saturated" lets the buffer fill: the cost of the drop path.
// BenchmarkAdd measures Add as the call path pays it; the store writer's
// throughput is a separate matter (it batches, and Dropped counts what it
// cannot absorb). "queued" stalls the real writer and drains the channel with
// a discarding consumer, pausing the timer whenever the buffer is half full,
// so every Add succeeds: the cost of a queued Add, consumer wake-ups
// included. "saturated/parallel" lets the buffer fill: the drop path.
func BenchmarkAdd(b *testing.B) {
	e := Entry{At: time.Now(), Surface: "/mcp", Server: "fs", Tool: "write_file", Class: "write",
		ArgsSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Outcome: OutcomeOK, LatencyMicros: 120}
	b.Run("queued", func(b *testing.B) {
		db, _ := openDB(b)
		unstall := make(chan struct{})
		l := mustOpen(b, db, 10000, time.Hour, options{beforeTx: func() { <-unstall }})
		stop := make(chan struct{})
		drained := make(chan struct{})
		go func() { // stands in for the writer
			defer close(drained)
			for {
				select {
				case <-l.ch:
				case <-stop:
					return
				}
			}
		}()
		b.ReportAllocs()
		for b.Loop() {
			l.Add(e)
			if len(l.ch) > cap(l.ch)/2 {
				b.StopTimer()
				for len(l.ch) > 0 {
					runtime.Gosched()
				}
				b.StartTimer()
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(l.Dropped())/float64(b.N), "dropped/op")
		close(stop)
		<-drained
		close(unstall)
	})
	b.Run("saturated/parallel", func(b *testing.B) {
		db, _ := openDB(b)
		unstall := make(chan struct{})
		l := mustOpen(b, db, 10000, time.Hour, options{buffer: 64, beforeTx: func() { <-unstall }})
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				l.Add(e)
			}
		})
		b.StopTimer()
		b.ReportMetric(float64(l.Dropped())/float64(b.N), "dropped/op")
		close(unstall)
	})
}

// Arguments handed to Add are hashed by the writer and never stored.
func TestArgsHashedNotStored(t *testing.T) {
	db, path := openDB(t)
	l := mustOpen(t, db, 100, time.Hour, options{})
	args := json.RawMessage(`{"secret":"marker-7f3a9"}`)
	l.Add(Entry{Server: "s", Tool: "t", Outcome: OutcomeOK, Args: args})
	l.Flush()
	got := query(t, l, "", 0)
	if len(got) != 1 || got[0].ArgsSHA256 != canon.ArgsSHA256(args) || got[0].Args != nil {
		t.Fatalf("entry = %+v, want the hash of the arguments and no arguments", got)
	}
	l.Close()
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("marker-7f3a9")) {
		t.Fatal("the store holds the raw arguments")
	}
}

// named is a store as another instance sees it.
type named struct {
	store.Store
	name string
}

func (n named) Instance() string { return n.name }

// Two instances write to one log: entries made at the same moment, with the
// same sequences (their clocks agree), all stay, each naming its instance;
// retention holds the log to its bound, counting the others' entries at
// least every recountEvery.
func TestInstancesShareOneLog(t *testing.T) {
	db, _ := openDB(t)
	at := time.Now()
	var mu sync.Mutex
	now := at
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	a := mustOpen(t, named{db, "a"}, 6, time.Hour, options{now: clock})
	b := mustOpen(t, named{db, "b"}, 6, time.Hour, options{now: clock})
	for i := range 2 {
		a.Add(Entry{At: at, Server: "s", Tool: fmt.Sprint("a", i)})
		b.Add(Entry{At: at, Server: "s", Tool: fmt.Sprint("b", i)})
	}
	a.Flush()
	b.Flush()
	got := query(t, a, "", 0)
	by := map[string]string{}
	for _, e := range got {
		by[e.Tool] = e.Instance
	}
	if len(got) != 4 || by["a0"] != "a" || by["a1"] != "a" || by["b0"] != "b" || by["b1"] != "b" {
		t.Fatalf("log holds %+v: want a0, a1 from a and b0, b1 from b", got)
	}
	// a counts the log again once its count is old: b's entries count too.
	mu.Lock()
	now = now.Add(recountEvery)
	mu.Unlock()
	for i := range 10 {
		a.Add(Entry{At: at.Add(time.Duration(i+1) * time.Millisecond), Server: "s", Tool: fmt.Sprint("later", i)})
		a.Flush()
	}
	if got := query(t, b, "", 0); len(got) != 6 || got[0].Tool != "later9" {
		t.Fatalf("log holds %d entries, newest %q: want 6, later9", len(got), got[0].Tool)
	}
}

// On PostgreSQL, two instances with their own handles write to one log:
// entries at the same moment all stay, each naming its instance.
func TestInstancesShareOneLogOnPostgres(t *testing.T) {
	url := pgtest.Start(t, pgtest.Options{}).URL()
	at := time.Now()
	logs := map[string]*Log{}
	for _, name := range []string{"a", "b"} {
		st, err := store.Open(context.Background(), store.Options{URL: url, Key: "a test key, not a secret", Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		logs[name] = mustOpen(t, st, 100, time.Hour, options{now: func() time.Time { return at }})
	}
	for name, l := range logs {
		for range 3 {
			l.Add(Entry{At: at, Server: "s", Tool: name})
		}
		l.Flush()
	}
	n := map[string]int{}
	for _, e := range query(t, logs["a"], "", 0) {
		if e.Tool != e.Instance {
			t.Fatalf("entry %+v names another instance", e)
		}
		n[e.Instance]++
	}
	if n["a"] != 3 || n["b"] != 3 {
		t.Fatalf("the log holds %v entries by instance: want 3 each", n)
	}
}

func TestQueryByUser(t *testing.T) {
	db, _ := openDB(t)
	l := mustOpen(t, db, 1000, time.Hour, options{})
	base := time.Now()
	for i := range 9 {
		l.Add(Entry{At: base.Add(time.Duration(i) * time.Millisecond), Server: []string{"a", "b"}[i%2], User: []string{"", "alice", "bot"}[i%3], Tool: fmt.Sprint(i)})
	}
	l.Flush()
	for _, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{User: "alice"}, "[7 4 1]"},
		{Filter{User: "bot", Server: "a"}, "[8 2]"},
		{Filter{User: "nobody"}, "[]"},
	} {
		es, err := l.Query(tc.f, 0)
		if err != nil {
			t.Fatal(err)
		}
		var tools []string
		for _, e := range es {
			tools = append(tools, e.Tool)
		}
		if got := fmt.Sprint(tools); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.f, got, tc.want)
		}
	}
}
