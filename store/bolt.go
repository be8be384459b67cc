package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// boltStore is the embedded store: one bbolt file that one process opens.
// A bucket path "a/b" is bucket b nested in bucket a, the layout of the
// versions before this package, which still reads.
type boltStore struct {
	db       *bolt.DB
	instance string
	seal     *sealer
	hub      *hub
}

func openBolt(path, instance string, seal *sealer) (*boltStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("the store %s is in use: another warden is running with this state dir; stop it or use --state-dir", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return &boltStore{db: db, instance: instance, seal: seal, hub: newHub()}, nil
}

func (s *boltStore) Instance() string { return s.instance }
func (s *boltStore) sealer() *sealer  { return s.seal }
func (s *boltStore) Shared() bool     { return false }

func (s *boltStore) Watch(topic string, fn func(Event)) func() { return s.hub.watch(topic, fn) }

// OnRejoin: the embedded store is never lost, so fn never runs.
func (s *boltStore) OnRejoin(func(context.Context) error) func() { return func() {} }

func (s *boltStore) View(_ context.Context, fn func(Tx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(sealedTx{&boltTx{tx: tx, s: s}, s.seal}) })
}

func (s *boltStore) Update(_ context.Context, fn func(Tx) error) error {
	return s.update(s.db.Update, fn)
}

func (s *boltStore) Batch(_ context.Context, fn func(Tx) error) error {
	return s.update(s.db.Batch, fn)
}

func (s *boltStore) update(run func(func(*bolt.Tx) error) error, fn func(Tx) error) error {
	var t *boltTx
	err := run(func(tx *bolt.Tx) error {
		t = &boltTx{tx: tx, s: s, write: true} // a retried fn publishes only its last run's events
		return fn(sealedTx{t, s.seal})
	})
	if err == nil {
		s.hub.deliver(t.events...)
	}
	return err
}

func (s *boltStore) Close() error {
	err := s.db.Close()
	s.hub.close()
	return err
}

type boltTx struct {
	tx       *bolt.Tx
	s        *boltStore
	write    bool
	events   []Event
	appended map[string][]byte // by bucket: the last key put, while only appended (see fill)
}

// bucket finds bucket's path; nil if any part is missing (or, with create,
// makes the missing parts).
func (t *boltTx) bucket(name string, create bool) (*bolt.Bucket, error) {
	if name == "" {
		return nil, errors.New("store: empty bucket name")
	}
	var b *bolt.Bucket
	for i, part := range strings.Split(name, "/") {
		var next *bolt.Bucket
		if i == 0 {
			next = t.tx.Bucket([]byte(part))
		} else {
			next = b.Bucket([]byte(part))
		}
		if next == nil && create {
			var err error
			if i == 0 {
				next, err = t.tx.CreateBucket([]byte(part))
			} else {
				next, err = b.CreateBucket([]byte(part))
			}
			if err != nil {
				return nil, fmt.Errorf("store: bucket %s: %w", name, err)
			}
		}
		if next == nil {
			return nil, nil
		}
		b = next
	}
	return b, nil
}

func (t *boltTx) Get(bucket string, key []byte) ([]byte, error) {
	b, err := t.bucket(bucket, false)
	if b == nil {
		return nil, err
	}
	return b.Get(key), nil
}

func (t *boltTx) Put(bucket string, key, value []byte) error {
	b, err := t.bucket(bucket, true)
	if err != nil {
		return err
	}
	if value == nil {
		value = []byte{} // a nil value would read as "no key"
	}
	t.fill(bucket, b, key)
	return b.Put(key, value)
}

// appendFill is how full bbolt fills the pages of a bucket this
// transaction only appended to, against its default of half: a bucket
// written in key order (a new server's tool records) would otherwise be
// left half empty, twice the pages to write and sync.
const appendFill = 0.9

// fill sets b's fill percent for a Put of key: appendFill while every key
// this transaction put in bucket came after all the keys it had, bbolt's
// default as soon as one did not (pages filled that far would split again
// on the next insert among them).
func (t *boltTx) fill(bucket string, b *bolt.Bucket, key []byte) {
	last, seen := t.appended[bucket]
	if !seen {
		last, _ = b.Cursor().Last()
		if t.appended == nil {
			t.appended = map[string][]byte{}
		}
	}
	if (seen && last == nil) || (last != nil && bytes.Compare(key, last) <= 0) {
		t.appended[bucket] = nil // not in order: nil from now on
		b.FillPercent = bolt.DefaultFillPercent
		return
	}
	t.appended[bucket] = bytes.Clone(key)
	b.FillPercent = appendFill
}

func (t *boltTx) Delete(bucket string, key []byte) error {
	b, err := t.bucket(bucket, false)
	if b == nil {
		return err
	}
	return b.Delete(key)
}

func (t *boltTx) Scan(bucket string, prefix []byte, reverse bool, fn func(k, v []byte) error) error {
	b, err := t.bucket(bucket, false)
	if b == nil {
		return err
	}
	c := b.Cursor()
	var k, v []byte
	switch {
	case !reverse:
		k, v = c.Seek(prefix)
	case len(prefix) == 0:
		k, v = c.Last()
	default:
		// The last key with prefix is just before the first key past it.
		if end := prefixEnd(prefix); end == nil {
			k, v = c.Last()
		} else if k, v = c.Seek(end); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = step(c, reverse) {
		if v == nil {
			continue // a child bucket
		}
		if err := fn(k, v); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

func step(c *bolt.Cursor, reverse bool) ([]byte, []byte) {
	if reverse {
		return c.Prev()
	}
	return c.Next()
}

// prefixEnd returns the least key greater than every key with prefix; nil
// if there is none (prefix is all 0xff).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (t *boltTx) Count(bucket string) (int, error) {
	b, err := t.bucket(bucket, false)
	if b == nil {
		return 0, err
	}
	n := 0
	err = b.ForEach(func(_, v []byte) error {
		if v != nil {
			n++
		}
		return nil
	})
	return n, err
}

func (t *boltTx) Buckets(parent string, fn func(name string) error) error {
	if parent == "" {
		return t.tx.ForEach(func(k []byte, _ *bolt.Bucket) error { return fn(string(k)) })
	}
	b, err := t.bucket(parent, false)
	if b == nil {
		return err
	}
	return b.ForEachBucket(func(k []byte) error { return fn(string(k)) })
}

func (t *boltTx) DeleteBucket(bucket string) error {
	i := strings.LastIndex(bucket, "/")
	if i < 0 {
		err := t.tx.DeleteBucket([]byte(bucket))
		if errors.Is(err, bolt.ErrBucketNotFound) {
			return nil
		}
		return err
	}
	p, err := t.bucket(bucket[:i], false)
	if p == nil {
		return err
	}
	err = p.DeleteBucket([]byte(bucket[i+1:]))
	if errors.Is(err, bolt.ErrBucketNotFound) {
		return nil
	}
	return err
}

// Lock: bbolt runs one read-write transaction at a time, and one process
// has the file, so every Update already holds every lock.
func (t *boltTx) Lock(string) error { return writable(t.write, "Lock") }

func (t *boltTx) Publish(topic string, msg []byte) error {
	if err := checkPublish(t.write, topic, msg); err != nil {
		return err
	}
	t.events = append(t.events, Event{Topic: topic, Msg: bytes.Clone(msg), Instance: t.s.instance})
	return nil
}

// Alive: the file is this process's alone, so only this instance runs.
func (t *boltTx) Alive(instance string) (bool, error) { return instance == t.s.instance, nil }
