// Package storetest is the conformance suite of store.Store: every
// implementation passes Run, and every shared one RunShared, so that no
// package above the store needs to know which it has.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/store"
)

// Key is a storeKey for the stores the suite opens.
const Key = "storetest-key-0123456789abcdef"

// hang bounds a wait that only a broken store makes long: a failure, not a
// figure.
const hang = 30 * time.Second

// Run runs the suite on fresh, empty stores from open, opened with Key. The
// suite closes them.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	fresh := func(t *testing.T) store.Store {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	for _, c := range []struct {
		name string
		run  func(*testing.T, store.Store)
	}{
		{"GetPutDelete", testGetPutDelete},
		{"AbsentBuckets", testAbsent},
		{"Order", testOrder},
		{"ScanPages", testScanPages},
		{"Buckets", testBuckets},
		{"Rollback", testRollback},
		{"Batch", testBatch},
		{"Publish", testPublish},
		{"ReadOnly", testReadOnly},
		{"Secrets", testSecrets},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, fresh(t)) })
	}
}

func update(t *testing.T, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func view(t *testing.T, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s store.Store, bucket, key string) []byte {
	t.Helper()
	var v []byte
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Get(bucket, []byte(key))
		v = bytes.Clone(got)
		return err
	})
	return v
}

func testGetPutDelete(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error {
		if err := tx.Put("b", []byte("k"), []byte("v1")); err != nil {
			return err
		}
		if err := tx.Put("b", []byte("k"), []byte("v2")); err != nil {
			return err
		}
		if err := tx.Put("b", []byte("empty"), nil); err != nil {
			return err
		}
		if err := tx.Put("bytes\xff\x00", []byte("k"), []byte("any bytes name a bucket")); err != nil {
			return err
		}
		return tx.Put("b/c", []byte("k"), []byte("in the child"))
	})
	if v := get(t, s, "bytes\xff\x00", "k"); v == nil {
		t.Error("Get in a bucket named by bytes that are not UTF-8: nothing")
	}
	if v := get(t, s, "b", "k"); string(v) != "v2" {
		t.Errorf("Get = %q, want the last Put, v2", v)
	}
	if v := get(t, s, "b", "empty"); v == nil || len(v) != 0 {
		t.Errorf("Get of an empty value = %#v, want empty and not nil (nil is no key)", v)
	}
	if v := get(t, s, "b/c", "k"); string(v) != "in the child" {
		t.Errorf("Get in the child bucket = %q", v)
	}
	update(t, s, func(tx store.Tx) error { return tx.Delete("b", []byte("k")) })
	if v := get(t, s, "b", "k"); v != nil {
		t.Errorf("Get after Delete = %q, want nil", v)
	}
	view(t, s, func(tx store.Tx) error {
		if n, err := tx.Count("b"); err != nil || n != 1 {
			t.Errorf("Count = %d, %v; want 1 (the empty value; not the child bucket)", n, err)
		}
		return nil
	})
}

func testAbsent(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error {
		if v, err := tx.Get("none", []byte("k")); v != nil || err != nil {
			t.Errorf("Get = %q, %v; want nothing", v, err)
		}
		if err := tx.Scan("none", nil, false, func(k, _ []byte) error { return fmt.Errorf("key %q", k) }); err != nil {
			t.Errorf("Scan: %v", err)
		}
		if n, err := tx.Count("none/sub"); n != 0 || err != nil {
			t.Errorf("Count = %d, %v", n, err)
		}
		if err := tx.Buckets("none", func(name string) error { return fmt.Errorf("bucket %q", name) }); err != nil {
			t.Errorf("Buckets: %v", err)
		}
		if err := tx.Delete("none", []byte("k")); err != nil {
			t.Errorf("Delete: %v", err)
		}
		if err := tx.DeleteBucket("none/sub"); err != nil {
			t.Errorf("DeleteBucket: %v", err)
		}
		return tx.DeleteBucket("none")
	})
}

// keys is bytewise ascending, 0x00 and 0xff included.
var keys = [][]byte{{0x00}, {0x01}, []byte("a"), []byte("a\x00"), []byte("ab"), []byte("a\xff"), []byte("b"),
	{0xff}, {0xff, 0x00}, {0xff, 0xff}, {0xff, 0xff, 0x01}}

func scan(t *testing.T, s store.Store, bucket string, prefix []byte, reverse bool, limit int) [][]byte {
	t.Helper()
	var got [][]byte
	view(t, s, func(tx store.Tx) error {
		return tx.Scan(bucket, prefix, reverse, func(k, v []byte) error {
			if !bytes.Equal(k, v) {
				t.Errorf("key %q has value %q", k, v)
			}
			got = append(got, bytes.Clone(k))
			if len(got) == limit {
				return store.ErrStop
			}
			return nil
		})
	})
	return got
}

func testOrder(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error {
		for _, i := range []int{6, 2, 9, 0, 10, 4, 1, 8, 3, 7, 5} { // not in order
			if err := tx.Put("o", keys[i], keys[i]); err != nil {
				return err
			}
		}
		return tx.Put("o/child", []byte("a"), []byte("a"))
	})
	rev := func(ks [][]byte) [][]byte { r := slices.Clone(ks); slices.Reverse(r); return r }
	for _, c := range []struct {
		prefix  []byte
		reverse bool
		limit   int
		want    [][]byte
	}{
		{nil, false, 0, keys},
		{nil, true, 0, rev(keys)},
		{[]byte("a"), false, 0, keys[2:6]},
		{[]byte("a"), true, 0, rev(keys[2:6])},
		{[]byte{0xff}, false, 0, keys[7:]},
		{[]byte{0xff}, true, 0, rev(keys[7:])},
		{[]byte{0xff, 0xff}, true, 0, rev(keys[9:])},
		{[]byte{0x00}, true, 0, keys[:1]},
		{[]byte("c"), false, 0, nil},
		{nil, false, 3, keys[:3]},
		{[]byte("a"), true, 2, rev(keys[2:6])[:2]},
	} {
		if got := scan(t, s, "o", c.prefix, c.reverse, c.limit); !slices.EqualFunc(got, c.want, bytes.Equal) {
			t.Errorf("Scan(prefix %q, reverse %v, stop after %d) = %q, want %q", c.prefix, c.reverse, c.limit, got, c.want)
		}
	}
	view(t, s, func(tx store.Tx) error {
		if n, err := tx.Count("o"); n != len(keys) || err != nil {
			t.Errorf("Count = %d, %v; want %d", n, err, len(keys))
		}
		boom := errors.New("boom")
		if err := tx.Scan("o", nil, false, func(_, _ []byte) error { return boom }); !errors.Is(err, boom) {
			t.Errorf("Scan's fn error: got %v", err)
		}
		return nil
	})
}

// testScanPages: a long scan whose fn writes in the same transaction sees
// every key once, in order.
func testScanPages(t *testing.T, s store.Store) {
	const n = 700
	key := func(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }
	update(t, s, func(tx store.Tx) error {
		for i := range n {
			if err := tx.Put("p", key(i), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	for _, reverse := range []bool{false, true} {
		update(t, s, func(tx store.Tx) error {
			i := 0
			err := tx.Scan("p", []byte("k"), reverse, func(k, _ []byte) error {
				want := i
				if reverse {
					want = n - 1 - i
				}
				if !bytes.Equal(k, key(want)) {
					return fmt.Errorf("key %d is %q, want %q", i, k, key(want))
				}
				i++
				return tx.Put("p/seen", k, []byte("y"))
			})
			if err == nil && i != n {
				err = fmt.Errorf("scanned %d keys, want %d", i, n)
			}
			return err
		})
	}
}

func buckets(t *testing.T, s store.Store, parent string) []string {
	t.Helper()
	var names []string
	view(t, s, func(tx store.Tx) error {
		return tx.Buckets(parent, func(name string) error { names = append(names, name); return nil })
	})
	return names
}

func testBuckets(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error {
		for _, b := range []string{"n/b/c", "n/b-x/y", "n/a", "n/b", "a_b/c", "axb/d", "a%/e", "abc/f", "nn/z"} {
			if err := tx.Put(b, []byte("k"), []byte("v")); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range []struct {
		parent string
		want   []string
	}{
		{"n", []string{"a", "b", "b-x"}},
		{"n/b", []string{"c"}},
		{"a_b", []string{"c"}},
		{"a%", []string{"e"}},
		{"n/a", nil},
		{"", []string{"a%", "a_b", "abc", "axb", "n", "nn"}},
	} {
		if got := buckets(t, s, c.parent); !slices.Equal(got, c.want) {
			t.Errorf("Buckets(%q) = %q, want %q", c.parent, got, c.want)
		}
	}
	update(t, s, func(tx store.Tx) error { return tx.DeleteBucket("n/b") })
	if got := buckets(t, s, "n"); !slices.Equal(got, []string{"a", "b-x"}) {
		t.Errorf("after DeleteBucket(n/b), Buckets(n) = %q, want [a b-x]", got)
	}
	for _, gone := range []string{"n/b", "n/b/c"} {
		if v := get(t, s, gone, "k"); v != nil {
			t.Errorf("%s kept its key after DeleteBucket(n/b)", gone)
		}
	}
	update(t, s, func(tx store.Tx) error { return tx.DeleteBucket("a_b") })
	if v := get(t, s, "axb/d", "k"); v == nil {
		t.Error("DeleteBucket(a_b) deleted axb/d")
	}
	update(t, s, func(tx store.Tx) error { return tx.DeleteBucket("n") })
	if got := buckets(t, s, "n"); got != nil {
		t.Errorf("after DeleteBucket(n), Buckets(n) = %q", got)
	}
	if v := get(t, s, "nn/z", "k"); v == nil {
		t.Error("DeleteBucket(n) deleted nn/z")
	}
}

func testRollback(t *testing.T, s store.Store) {
	update(t, s, func(tx store.Tx) error { return tx.Put("r", []byte("k"), []byte("before")) })
	boom := errors.New("boom")
	err := s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Put("r", []byte("k"), []byte("after")); err != nil {
			return err
		}
		if err := tx.Put("r", []byte("new"), []byte("x")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	if v := get(t, s, "r", "k"); string(v) != "before" {
		t.Errorf("after a failed Update, k = %q, want before", v)
	}
	if v := get(t, s, "r", "new"); v != nil {
		t.Errorf("after a failed Update, new = %q, want nothing", v)
	}
}

// testBatch: concurrent Batch calls each commit their writes, taking a
// lock as approval's discovery passes do; one that fails returns its error
// and leaves nothing, however it shared a commit with the others.
func testBatch(t *testing.T, s store.Store) {
	const n = 16
	boom := errors.New("boom")
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs <- s.Batch(context.Background(), func(tx store.Tx) error {
				if err := tx.Lock("batch/" + strconv.Itoa(i%4)); err != nil {
					return err
				}
				if err := tx.Put("b", []byte(strconv.Itoa(i)), []byte("v")); err != nil {
					return err
				}
				if i == 5 {
					return boom
				}
				return nil
			})
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		switch {
		case errors.Is(err, boom):
			failed++
		case err != nil:
			t.Fatalf("Batch: %v", err)
		}
	}
	if failed != 1 {
		t.Fatalf("%d Batch calls returned fn's error, want 1", failed)
	}
	for i := range n {
		v := get(t, s, "b", strconv.Itoa(i))
		if i == 5 && v != nil {
			t.Errorf("the failed Batch's write stayed: %q", v)
		}
		if i != 5 && string(v) != "v" {
			t.Errorf("Batch %d's write: %q, want v", i, v)
		}
	}
}

// Watch returns the events on topic, until the test ends.
func Watch(t *testing.T, s store.Store, topic string) <-chan store.Event {
	ch := make(chan store.Event, 1000)
	t.Cleanup(s.Watch(topic, func(e store.Event) { ch <- e }))
	return ch
}

// Next is the next event on ch; the test fails if none comes.
func Next(t *testing.T, ch <-chan store.Event) store.Event {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(hang):
		t.Fatal("no event")
		return store.Event{}
	}
}

func publish(t *testing.T, s store.Store, topic string, msgs ...string) {
	t.Helper()
	update(t, s, func(tx store.Tx) error {
		for _, m := range msgs {
			if err := tx.Publish(topic, []byte(m)); err != nil {
				return err
			}
		}
		return nil
	})
}

func testPublish(t *testing.T, s store.Store) {
	ch := Watch(t, s, "t")
	other := Watch(t, s, "other")
	boom := errors.New("boom")
	err := s.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Publish("t", []byte("rolled back")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	publish(t, s, "t", "one", "one") // the same message twice is two events
	binary := bytes.Repeat([]byte{0x00, 0xff, 'z', 0x80}, store.MaxMessage/4)
	publish(t, s, "t", string(binary))
	publish(t, s, "other", "elsewhere")
	for i, want := range []string{"one", "one", string(binary)} {
		e := Next(t, ch)
		if string(e.Msg) != want || e.Topic != "t" || e.Resync || !e.Mine(s) {
			t.Fatalf("event %d = %.20q on %s from %s (resync %v), want %.20q from this instance (a rolled-back Publish is never seen)",
				i, e.Msg, e.Topic, e.Instance, e.Resync, want)
		}
	}
	if e := Next(t, other); string(e.Msg) != "elsewhere" {
		t.Errorf("event on other = %q", e.Msg)
	}
	err = s.Update(context.Background(), func(tx store.Tx) error {
		return tx.Publish("t", make([]byte, store.MaxMessage+1))
	})
	if err == nil {
		t.Error("Publish over MaxMessage: no error")
	}
}

func testReadOnly(t *testing.T, s store.Store) {
	view(t, s, func(tx store.Tx) error {
		if err := tx.Lock("x"); err == nil {
			t.Error("Lock in View: no error")
		}
		return nil
	})
	view(t, s, func(tx store.Tx) error {
		if err := tx.Publish("x", nil); err == nil {
			t.Error("Publish in View: no error")
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		if ok, err := tx.Alive(s.Instance()); !ok || err != nil {
			t.Errorf("Alive(this instance) = %v, %v", ok, err)
		}
		if ok, err := tx.Alive("no-such-instance"); ok || err != nil {
			t.Errorf("Alive(no-such-instance) = %v, %v", ok, err)
		}
		return nil
	})
}

func testSecrets(t *testing.T, s store.Store) {
	const plain = "the-plaintext-token"
	update(t, s, func(tx store.Tx) error { return tx.PutSecret("s", []byte("k"), []byte(plain)) })
	var raw []byte
	view(t, s, func(tx store.Tx) error {
		v, err := tx.GetSecret("s", []byte("k"))
		if string(v) != plain || err != nil {
			t.Errorf("GetSecret = %q, %v; want %q", v, err, plain)
		}
		r, err := tx.Get("s", []byte("k"))
		raw = bytes.Clone(r)
		return err
	})
	if bytes.Contains(raw, []byte(plain)) || !store.Sealed(raw) {
		t.Errorf("the stored value %q is not sealed", raw)
	}
	update(t, s, func(tx store.Tx) error { return tx.Put("s", []byte("moved"), raw) })
	view(t, s, func(tx store.Tx) error {
		if v, err := tx.GetSecret("s", []byte("moved")); err == nil {
			t.Errorf("a sealed value moved to another key opened: %q", v)
		}
		if v, err := tx.GetSecret("s", []byte("none")); v != nil || err != nil {
			t.Errorf("GetSecret of no key = %q, %v", v, err)
		}
		return nil
	})
}

// Shared is what RunShared needs of a shared store.
type Shared struct {
	// Open opens another handle (another instance) on the one database,
	// with Key. The suite closes it.
	Open func(t *testing.T) store.Store
	// Stop takes the database down; Start brings it back, same data.
	Stop, Start func(t *testing.T)
}

// RunShared runs the part of the suite that needs two instances on one
// database.
func RunShared(t *testing.T, sh Shared) {
	open := func(t *testing.T) store.Store {
		s := sh.Open(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("Lock", func(t *testing.T) { testLock(t, open(t), open(t)) })
	t.Run("Deadlock", func(t *testing.T) { testDeadlock(t, open(t), open(t)) })
	t.Run("PublishAcross", func(t *testing.T) {
		a, b := open(t), open(t)
		ch := Watch(t, b, "across")
		publish(t, a, "across", "hello")
		if e := Next(t, ch); string(e.Msg) != "hello" || e.Instance != a.Instance() || e.Mine(b) {
			t.Errorf("b saw %+v, want hello from %s", e, a.Instance())
		}
	})
	t.Run("Alive", func(t *testing.T) {
		a, b := open(t), sh.Open(t)
		alive := func() bool {
			var ok bool
			view(t, a, func(tx store.Tx) (err error) { ok, err = tx.Alive(b.Instance()); return err })
			return ok
		}
		if !alive() {
			t.Error("Alive(b) is false while b is open")
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if alive() {
			t.Error("Alive(b) is true after b closed")
		}
	})
	t.Run("Unavailable", func(t *testing.T) { testUnavailable(t, sh, open(t), open(t)) })
}

// testLock: handles × goroutines increment one counter in read-modify-write
// Updates under Lock; no increment is lost.
func testLock(t *testing.T, a, b store.Store) {
	const goroutines, increments = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, 2*goroutines)
	for _, s := range []store.Store{a, b} {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range increments {
					err := s.Update(context.Background(), func(tx store.Tx) error {
						if err := tx.Lock("counter"); err != nil {
							return err
						}
						v, err := tx.Get("lock", []byte("counter"))
						if err != nil {
							return err
						}
						n, _ := strconv.Atoi(string(v))
						return tx.Put("lock", []byte("counter"), []byte(strconv.Itoa(n+1)))
					})
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, want := string(get(t, a, "lock", "counter")), strconv.Itoa(2*goroutines*increments); got != want {
		t.Errorf("counter = %s, want %s: increments were lost", got, want)
	}
}

// testDeadlock: two Updates that take two locks in opposite orders
// deadlock on their first run; the store runs the loser again and both
// succeed.
func testDeadlock(t *testing.T, a, b store.Store) {
	var holding sync.WaitGroup // both hold their first lock
	holding.Add(2)
	errs := make(chan error, 2)
	for i, s := range []store.Store{a, b} {
		first, second := "left", "right"
		if i == 1 {
			first, second = second, first
		}
		go func() {
			runs := 0
			errs <- s.Update(context.Background(), func(tx store.Tx) error {
				runs++
				if err := tx.Lock(first); err != nil {
					return err
				}
				if runs == 1 {
					holding.Done()
					holding.Wait()
				}
				if err := tx.Lock(second); err != nil {
					return err
				}
				return tx.Put("deadlock", []byte(first), []byte(strconv.Itoa(runs)))
			})
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Update: %v", err)
		}
	}
}

// testUnavailable: with the database down an Update fails with
// ErrUnavailable, without waiting for the caller's deadline; once it is
// back, a's OnRejoin funcs run, again while one fails, and while they run a
// is not alive (what they store is stored before any instance sees a
// alive); then watchers are told to resync and both handles work again.
func testUnavailable(t *testing.T, sh Shared, a, b store.Store) {
	ch := Watch(t, a, "u")
	var rejoins []bool // a's Alive, as a sees it, at each run of the OnRejoin func
	stop := a.OnRejoin(func(ctx context.Context) error {
		var alive bool
		err := a.View(ctx, func(tx store.Tx) (err error) { alive, err = tx.Alive(a.Instance()); return err })
		if err != nil {
			return err
		}
		rejoins = append(rejoins, alive)
		if len(rejoins) == 1 {
			return errors.New("the first rejoin fails")
		}
		return nil
	})
	defer stop()
	update(t, a, func(tx store.Tx) error { return tx.Put("u", []byte("k"), []byte("before")) })
	sh.Stop(t)
	restarted := false
	defer func() {
		if !restarted {
			sh.Start(t)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	for _, s := range []store.Store{a, b} {
		err := s.Update(ctx, func(tx store.Tx) error { return tx.Put("u", []byte("k"), []byte("during")) })
		if !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
			t.Fatalf("Update with the database down: %v; want ErrUnavailable before the deadline", err)
		}
		err = s.View(ctx, func(tx store.Tx) error { _, err := tx.Get("u", []byte("k")); return err })
		if !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
			t.Fatalf("View with the database down: %v; want ErrUnavailable before the deadline", err)
		}
	}
	sh.Start(t)
	restarted = true
	if e := Next(t, ch); !e.Resync {
		t.Fatalf("after the database came back: %+v, want a Resync", e)
	}
	if len(rejoins) != 2 || slices.Contains(rejoins, true) {
		t.Errorf("a's OnRejoin func saw a alive: %v at each run; want two runs (the first failed), each with a not alive", rejoins)
	}
	if v := get(t, a, "u", "k"); string(v) != "before" {
		t.Errorf("k = %q, want before", v)
	}
	publish(t, b, "u", "back")
	if e := Next(t, ch); string(e.Msg) != "back" {
		t.Errorf("after the Resync: %+v, want b's message", e)
	}
}
