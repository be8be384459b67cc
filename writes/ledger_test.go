package writes

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/wardenmcp/warden/decisions"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/store"
	bolt "go.etcd.io/bbolt"
)

// openDB opens the embedded store at path, as a new run of an instance.
func openDB(t testing.TB, path string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newLedger(t testing.TB) (*Ledger, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db := openDB(t, path)
	t.Cleanup(func() { db.Close() })
	l, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l, path
}

func TestClassify(t *testing.T) {
	tr, fa := true, false
	ann := map[string]*mcp.ToolAnnotations{
		"nil":                 nil,
		"empty":               {},
		"ro":                  {ReadOnlyHint: true},
		"ro+destr=true":       {ReadOnlyHint: true, DestructiveHint: &tr},
		"ro+destr=false":      {ReadOnlyHint: true, DestructiveHint: &fa},
		"destr=true":          {DestructiveHint: &tr},
		"destr=false":         {DestructiveHint: &fa},
		"destr=false+idem+ow": {DestructiveHint: &fa, IdempotentHint: true, OpenWorldHint: &tr},
	}
	noOverride := map[string]Class{
		"nil":                 ClassDestructive,
		"empty":               ClassDestructive,
		"ro":                  ClassRead,
		"ro+destr=true":       ClassRead,
		"ro+destr=false":      ClassRead,
		"destr=true":          ClassDestructive,
		"destr=false":         ClassWrite,
		"destr=false+idem+ow": ClassWrite,
	}
	for name, a := range ann {
		if got := Classify("", a); got != noOverride[name] {
			t.Errorf("Classify(%q, %s) = %s, want %s", "", name, got, noOverride[name])
		}
		for _, o := range []Class{ClassRead, ClassWrite, ClassDestructive} {
			if got := Classify(string(o), a); got != o {
				t.Errorf("Classify(%q, %s) = %s, want the override", o, name, got)
			}
		}
		if got := Classify("bogus", a); got != ClassDestructive {
			t.Errorf("Classify(bogus, %s) = %s, want destructive (fail closed)", name, got)
		}
	}
	if _, err := ParseClass("Read"); err == nil {
		t.Error("ParseClass accepted Read")
	}
	if c, err := ParseClass("write"); err != nil || c != ClassWrite {
		t.Errorf("ParseClass(write) = %v, %v", c, err)
	}
}

func TestArgsHash(t *testing.T) {
	a := canon.ArgsSHA256(json.RawMessage(`{"b":1, "a":[1,2]}`))
	b := canon.ArgsSHA256(json.RawMessage(`{ "a":[1,2],"b":1}`))
	if a != b || len(a) != 64 {
		t.Fatalf("key order changed the hash: %s %s", a, b)
	}
	empty := canon.ArgsSHA256(json.RawMessage(`{}`))
	for _, raw := range []string{"", "  ", "null"} {
		if got := canon.ArgsSHA256(json.RawMessage(raw)); got != empty {
			t.Errorf("canon.ArgsSHA256(%q) = %s, want the hash of {} %s", raw, got, empty)
		}
	}
	if canon.ArgsSHA256(json.RawMessage(`{"a":`)) == empty {
		t.Error("invalid JSON hashed like {}")
	}
}

// Every call recorded latches its server, each kept (and durable) until a
// Clear lifts them all.
func TestRecordDurableEachKeptClear(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openDB(t, path)
	l, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	l.OnChange(func(s string, latched bool) {
		events = append(events, s+map[bool]string{true: "+", false: "-"}[latched])
	})
	if _, ok := l.Check("fs"); ok {
		t.Fatal("latched before any record")
	}
	first := Latch{Server: "fs", Tool: "move_file", ArgsSHA256: canon.ArgsSHA256(json.RawMessage(`{"a":1}`)),
		At: time.Now(), Reason: ReasonTimeout, Surface: "/mcp"}
	if err := l.Record(first, nil); err != nil {
		t.Fatalf("Record: %v", err)
	}
	second := first
	second.Tool, second.Reason, second.At = "write_file", ReasonCancelled, first.At.Add(time.Millisecond)
	if err := l.Record(second, nil); err != nil {
		t.Fatalf("second Record: %v", err)
	}
	if err := l.Record(Latch{Server: "other", Reason: ReasonUpstreamLost}, nil); err != nil {
		t.Fatal("record other")
	}
	if got := l.List(); len(got) != 3 || got[0].Tool != "move_file" || got[1].Tool != "write_file" || got[2].Server != "other" {
		t.Fatalf("List = %+v", got)
	}
	db.Close()

	// Reopen: both records of fs survived, the first is what Check answers.
	db = openDB(t, path)
	l, err = Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if want := "fs+ fs+ other+"; fmtEvents(events) != want {
		t.Fatalf("events %q, want %q", fmtEvents(events), want)
	}
	events = nil
	l.OnChange(func(s string, latched bool) {
		events = append(events, s+map[bool]string{true: "+", false: "-"}[latched])
	})
	got, ok := l.Check("fs")
	if !ok || got.Tool != "move_file" || got.Reason != ReasonTimeout || got.Surface != "/mcp" ||
		got.ArgsSHA256 != first.ArgsSHA256 || !got.At.Equal(first.At) {
		t.Fatalf("after reopen Check = %+v, %v; want %+v", got, ok, first)
	}
	if p, lt := l.Admit("fs"); lt == nil || lt.Tool != "move_file" {
		p.Release()
		t.Fatalf("Admit on latched server = %+v", lt)
	}

	cleared, err := l.Clear("fs", "test")
	if err != nil || len(cleared) != 2 || cleared[0].Tool != "move_file" || !cleared[0].At.Equal(first.At) ||
		cleared[1].Tool != "write_file" || cleared[1].Reason != ReasonCancelled || !cleared[1].At.Equal(second.At) {
		t.Fatalf("Clear = %+v, %v", cleared, err)
	}
	if ls, _ := l.Clear("fs", "test"); len(ls) != 0 {
		t.Fatal("second Clear reported a latch")
	}
	// The clear is the operator's decision, recorded once: the second
	// cleared nothing.
	if ds, err := decisions.List(context.Background(), l.st, "", 10); err != nil || len(ds) != 1 ||
		ds[0].Action != decisions.Clear || ds[0].Operator != "test" || ds[0].Server != "fs" || ds[0].Latches != 2 {
		t.Fatalf("decisions after two clears = %+v, %v; want one clear of fs's 2 latches by test", ds, err)
	}
	if ls, _ := l.Clear("never-seen", "test"); len(ls) != 0 {
		t.Fatal("Clear of unknown server reported a latch")
	}
	p, lt := l.Admit("fs")
	if lt != nil {
		t.Fatal("still latched after Clear")
	}
	p.Release()
	p.Release() // idempotent
	db.Close()

	db = openDB(t, path)
	defer db.Close()
	l, err = Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Check("fs"); ok {
		t.Fatal("Clear was not durable")
	}
	if _, ok := l.Check("other"); !ok {
		t.Fatal("other latch lost")
	}
	if want := "fs-"; fmtEvents(events) != want {
		t.Fatalf("events %q, want %q", fmtEvents(events), want)
	}
}

func fmtEvents(e []string) string {
	var b bytes.Buffer
	for i, s := range e {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

func TestStoreNeverHoldsArguments(t *testing.T) {
	const marker = "MARKER-7f3a-do-not-store"
	path := filepath.Join(t.TempDir(), "state.db")
	db := openDB(t, path)
	l, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"path":"/tmp/x","content":"` + marker + `"}`)
	h := canon.ArgsSHA256(args)
	lt := Latch{Server: "fs", Tool: "write_file", ArgsSHA256: h, Reason: ReasonTimeout, Surface: "/mcp"}
	lt.Args, _ = DescribeArgs(args, false) // no recordArgs: names and sizes only
	if err := l.Record(lt, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(marker)) {
		t.Fatal("store file contains the raw argument marker")
	}
	if !bytes.Contains(raw, []byte(h)) || !bytes.Contains(raw, []byte(`"content"`)) {
		t.Fatal("store file lacks the hash or the arguments' names: searching the wrong file?")
	}
}

// TestGate: 50 concurrent writers keep calling one server; one of them has a
// call that times out after dispatch and records a latch (as do a few others
// whose calls also "fail" afterwards). Each record is kept, and no call is
// dispatched after the first Record returned.
func TestGate(t *testing.T) {
	l, _ := newLedger(t)
	const workers = 50
	var (
		clock      atomic.Int64 // logical time: every dispatch and the Record return take a tick
		dispatches atomic.Int64
		lastDisp   atomic.Int64 // highest dispatch tick
		recordedAt atomic.Int64 // tick taken right after the first Record returned
		records    atomic.Int64
		refused    atomic.Int64
		start      = make(chan struct{})
		wg         sync.WaitGroup
	)
	recordedAt.Store(1 << 62)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := 0; ; i++ {
				p, lt := l.Admit("fs")
				if lt != nil {
					refused.Add(1)
					return
				}
				// Work between the decision and the bytes leaving (encoding etc.).
				time.Sleep(time.Duration(w%5) * 20 * time.Microsecond)
				tick := clock.Add(1)
				dispatches.Add(1)
				for {
					old := lastDisp.Load()
					if tick <= old || lastDisp.CompareAndSwap(old, tick) {
						break
					}
				}
				p.Release()
				// Worker 7's 20th call times out; a few others' calls,
				// dispatched too, also end unknown.
				if (w == 7 && i == 20) || (w%10 == 3 && i == 25) {
					if err := l.Record(Latch{Server: "fs", Tool: "t", Reason: ReasonTimeout, Surface: "/mcp"}, nil); err != nil {
						t.Error(err)
					}
					tick := clock.Add(1)
					for {
						old := recordedAt.Load()
						if tick >= old || recordedAt.CompareAndSwap(old, tick) {
							break
						}
					}
					records.Add(1)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if got := l.List(); len(got) != int(records.Load()) || len(got) == 0 {
		t.Fatalf("%d records, List = %+v", records.Load(), got)
	}
	if last, rec := lastDisp.Load(), recordedAt.Load(); last > rec {
		t.Fatalf("a call was dispatched (tick %d) after Record returned (tick %d)", last, rec)
	}
	if refused.Load() != workers {
		t.Fatalf("refused %d, want %d", refused.Load(), workers)
	}
	t.Logf("%d dispatches before the latch", dispatches.Load())
}

func BenchmarkCheck(b *testing.B) {
	l, _ := newLedger(b)
	for i := range 20 {
		p, _ := l.Admit("server" + string(rune('a'+i)))
		p.Release()
	}
	if err := l.Record(Latch{Server: "latched", Reason: ReasonTimeout}, nil); err != nil {
		b.Fatal(err)
	}
	b.Run("unlatched", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := l.Check("serverk"); ok {
				b.Fatal("latched")
			}
		}
	})
	b.Run("latched", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := l.Check("latched"); !ok {
				b.Fatal("not latched")
			}
		}
	})
	b.Run("admit+release/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, lt := l.Admit("serverk")
				if lt != nil {
					b.Fatal("latched")
				}
				p.Release()
			}
		})
	})
}

// The gateway releases from the transport's "sent" callback and from a defer,
// possibly on different goroutines.
func TestReleaseConcurrent(t *testing.T) {
	l, _ := newLedger(t)
	for range 200 {
		p, lt := l.Admit("fs")
		if lt != nil {
			t.Fatal("latched")
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() { defer wg.Done(); p.Release() }()
		}
		wg.Wait()
	}
	// Every permit is released exactly once, so Record does not wait forever
	// and does not find the gate over-released.
	if err := l.Record(Latch{Server: "fs", Reason: ReasonCancelled}, nil); err != nil {
		t.Fatalf("Record: %v", err)
	}
}

// Stores written by earlier versions hold one latch per server as a JSON
// object, or several as an array, without the fields from SentAt on: each
// still latches, and a further call adds to it.
func TestOldSingleLatchStillReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := bolt.Open(path, 0o600, nil) // as earlier versions wrote it
	if err != nil {
		t.Fatal(err)
	}
	old := Latch{Server: "fs", Tool: "move_file", ArgsSHA256: "aa", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Reason: ReasonTimeout, Surface: "mcp"}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte(latchBucket))
		if err != nil {
			return err
		}
		v := `{"server":"fs","tool":"move_file","args_sha256":"aa","at":"2026-01-02T03:04:05Z","reason":"timeout","surface":"mcp"}`
		if err := b.Put([]byte("fs"), []byte(v)); err != nil {
			return err
		}
		if err := b.Put([]byte("two"), []byte("["+strings.ReplaceAll(v, "fs", "two")+","+v+"]")); err != nil {
			return err
		}
		if err := b.Put([]byte("garbled"), []byte("{not json")); err != nil {
			return err
		}
		ib, err := tx.CreateBucket([]byte(intentBucket)) // a call in flight when an earlier version died
		if err != nil {
			return err
		}
		return ib.Put([]byte("legacy\x00\x00\x00\x00\x00\x00\x00\x00\x07"), []byte(`{"server":"legacy","tool":"w"}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	st := openDB(t, path)
	l, err := Open(st)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := l.Check("legacy"); !ok || got.Tool != "w" || got.Reason != ReasonInterrupted {
		t.Fatalf("an earlier version's call in flight: %+v, %v; want latched", got, ok)
	}
	if got, ok := l.Check("fs"); !ok || !reflect.DeepEqual(got, old) {
		t.Fatalf("Check = %+v, %v; want %+v", got, ok, old)
	}
	if _, ok := l.Check("garbled"); !ok {
		t.Fatal("an undecodable record did not latch its server")
	}
	next := Latch{Server: "fs", Tool: "write_file", Reason: ReasonCancelled}
	if err := l.Record(next, nil); err != nil {
		t.Fatal(err)
	}
	l.Close()
	st.Close()

	st = openDB(t, path)
	defer st.Close()
	if l, err = Open(st); err != nil {
		t.Fatal(err)
	}
	got := l.List()
	if len(got) != 6 || got[0].Tool != "move_file" || !got[0].At.Equal(old.At) || got[1].Tool != "write_file" || got[2].Server != "garbled" ||
		got[3].Server != "legacy" || got[4].Server != "two" || got[5].Server != "two" || got[5].Tool != "move_file" {
		t.Fatalf("List = %+v", got)
	}
}
