package writes

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A call written down and never struck off (Warden died mid-call) latches
// its server at the next open, with the call's tool and argument hash; one
// struck off leaves nothing; a server already latched keeps its first latch.
func TestIntentsLatchAfterACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db := openDB(t, path)
	l, err := Open(db)
	if err != nil {
		t.Fatal(err)
	}
	done, err := l.Begin(Latch{Server: "finished", Tool: "w", ArgsSHA256: "aa", Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	done.End()
	if _, err := l.Begin(Latch{Server: "crashed", Tool: "w", ArgsSHA256: "bb", Surface: "mcp/crashed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Record(Latch{Server: "latched", Tool: "first", Reason: ReasonTimeout}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Begin(Latch{Server: "latched", Tool: "second"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Begin(Latch{Server: "garbled", Tool: "w"}); err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error { // a record that cannot be read back
		b := tx.Bucket(intentBucket)
		k, _ := b.Cursor().Last()
		return b.Put(k, []byte("not json"))
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
		if len(got) != 3 {
			t.Fatalf("latches %+v, want crashed, garbled and latched", got)
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
		l.Close()
		db.Close()
	}
}

// The cost a write call pays before it is sent: one committed transaction.
//
//	go test -run '^$' -bench BenchmarkBegin ./writes/
func BenchmarkBegin(b *testing.B) {
	db := openDB(b, filepath.Join(b.TempDir(), "w.db"))
	defer db.Close()
	l, err := Open(db)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for b.Loop() {
		in, err := l.Begin(Latch{Server: "s", Tool: "w", ArgsSHA256: "aa"})
		if err != nil {
			b.Fatal(err)
		}
		in.End()
	}
}
