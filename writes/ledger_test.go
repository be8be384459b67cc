package writes

import (
	"bytes"
	"encoding/json"
	"github.com/wardenmcp/warden/internal/canon"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	bolt "go.etcd.io/bbolt"
)

func openDB(t testing.TB, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return db
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

func TestRecordDurableFirstKeptClear(t *testing.T) {
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
	if ok, err := l.Record(first); !ok || err != nil {
		t.Fatalf("Record = %v, %v", ok, err)
	}
	second := first
	second.Tool, second.Reason = "write_file", ReasonCancelled
	if ok, err := l.Record(second); ok || err != nil {
		t.Fatalf("second Record = %v, %v; want false, nil", ok, err)
	}
	if ok, _ := l.Record(Latch{Server: "other", Reason: ReasonUpstreamLost}); !ok {
		t.Fatal("record other")
	}
	if got := l.List(); len(got) != 2 || got[0].Server != "fs" || got[1].Server != "other" {
		t.Fatalf("List = %+v", got)
	}
	db.Close()

	// Reopen: the first record survived, the second did not replace it.
	db = openDB(t, path)
	l, err = Open(db)
	if err != nil {
		t.Fatal(err)
	}
	if want := "fs+ other+"; fmtEvents(events) != want {
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

	cleared, ok, err := l.Clear("fs")
	if err != nil || !ok || cleared.Tool != "move_file" || !cleared.At.Equal(first.At) {
		t.Fatalf("Clear = %+v, %v, %v", cleared, ok, err)
	}
	if _, ok, _ := l.Clear("fs"); ok {
		t.Fatal("second Clear reported a latch")
	}
	if _, ok, _ := l.Clear("never-seen"); ok {
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
	h := canon.ArgsSHA256(json.RawMessage(`{"path":"/tmp/x","content":"` + marker + `"}`))
	if _, err := l.Record(Latch{Server: "fs", Tool: "write_file", ArgsSHA256: h, Reason: ReasonTimeout, Surface: "/mcp"}); err != nil {
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
	if !bytes.Contains(raw, []byte(h)) {
		t.Fatal("store file lacks the hash: searching the wrong file?")
	}
}

// TestGate: 50 concurrent writers keep calling one server; one of them has a
// call that times out after dispatch and records a latch (as do a few others
// whose calls also "fail" afterwards). Exactly one record is kept, and no call
// is dispatched after Record returned.
func TestGate(t *testing.T) {
	l, _ := newLedger(t)
	const workers = 50
	var (
		clock      atomic.Int64 // logical time: every dispatch and the Record return take a tick
		dispatches atomic.Int64
		lastDisp   atomic.Int64 // highest dispatch tick
		recordedAt atomic.Int64 // tick taken right after the winning Record returned
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
				// Worker 7's 20th call times out; a few others' calls also
				// end unknown later (they must not add records).
				if (w == 7 && i == 20) || (w%10 == 3 && i == 25) {
					ok, err := l.Record(Latch{Server: "fs", Tool: "t", Reason: ReasonTimeout, Surface: "/mcp"})
					if err != nil {
						t.Error(err)
					}
					if ok {
						recordedAt.Store(clock.Add(1))
						records.Add(1)
					}
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := records.Load(); n != 1 {
		t.Fatalf("%d records, want exactly 1", n)
	}
	if got := l.List(); len(got) != 1 {
		t.Fatalf("List = %+v", got)
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
	if _, err := l.Record(Latch{Server: "latched", Reason: ReasonTimeout}); err != nil {
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
	if ok, err := l.Record(Latch{Server: "fs", Reason: ReasonCancelled}); !ok || err != nil {
		t.Fatalf("Record = %v, %v", ok, err)
	}
}
