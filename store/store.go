// Package store is where Warden keeps what must outlive the process and be
// shared by every instance of one Warden: tool records and approvals,
// latches and writes in flight, activity, upstream sessions and OAuth tokens,
// UI sessions, the instances themselves.
//
// A Store is a set of buckets of ordered keys with transactions, and a
// message bus between instances. It has two implementations: the embedded
// bbolt file in the state dir (one instance; the default) and PostgreSQL (one
// or many instances). Both pass the same conformance suite (storetest), and
// no package above this one knows which it has.
//
// Three rules make many instances behave as one:
//
//   - Read-modify-write of a shared record happens in one Update that first
//     takes Tx.Lock for it: the lock holds across instances until the
//     transaction ends. Memory is a cache; the store decides.
//   - A change other instances must act on is announced with Tx.Publish in
//     the transaction that made it. Every instance's Watch for the topic
//     sees it once it is committed, this instance's too.
//   - When the store cannot be reached, Update fails with ErrUnavailable and
//     nothing is written; what callers hold in memory stays as it was. When
//     it comes back, the OnRejoin funcs store what could not be stored
//     before other instances see this one alive again, and then every
//     watcher gets a Resync event: reload everything.
package store

import (
	"context"
	"errors"
)

// ErrUnavailable wraps every failure to reach the store (the database is
// down or unreachable). The operation did not take effect.
var ErrUnavailable = errors.New("the store is unavailable")

// Store is the shared state of one Warden. Safe for concurrent use.
type Store interface {
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a read-write transaction, committed when fn returns
	// nil and rolled back otherwise. fn may run more than once (a
	// serialization retry): it must have no effect outside tx.
	Update(ctx context.Context, fn func(Tx) error) error
	// Batch is Update for small independent writes that may share one
	// commit with other Batch calls; fn may run more than once.
	Batch(ctx context.Context, fn func(Tx) error) error

	// Watch calls fn with every event published on topic, by any instance,
	// after its transaction committed, in commit order per publisher. fn
	// runs on one goroutine per Store and must not block for long. The
	// returned func stops the watch.
	Watch(topic string, fn func(Event)) (stop func())

	// OnRejoin registers fn, run each time this instance reaches the store
	// again after losing it, before any instance can see it alive again
	// (Tx.Alive) and before the watchers' Resync: what it could not store
	// meanwhile (a latch) is stored before others take what it left in the
	// store for the doings of a live instance. Until every fn returns nil
	// the instance stays not alive and the store tries again; the funcs run
	// in the order they were registered. The embedded store is never lost:
	// fn never runs. stop unregisters fn.
	OnRejoin(fn func(ctx context.Context) error) (stop func())

	// Instance names this process among the instances sharing the store.
	Instance() string
	// Shared reports whether other instances may share the store.
	Shared() bool
	// Close releases the store; pending Batch calls are committed first.
	Close() error
}

// Tx is one transaction. Keys sort bytewise. A bucket exists once a key is
// put in it; reading a missing bucket reads nothing. A bucket name may be a
// path ("tools/github"): Buckets lists the children of a parent.
type Tx interface {
	// Get returns the value at key, nil if none. The slice is valid only
	// during the transaction.
	Get(bucket string, key []byte) ([]byte, error)
	Put(bucket string, key, value []byte) error
	Delete(bucket string, key []byte) error
	// Scan calls fn for each key with prefix (nil: all), ascending or, with
	// reverse, descending, until fn returns an error; ErrStop ends the scan
	// without error. k and v are valid only during the call.
	Scan(bucket string, prefix []byte, reverse bool, fn func(k, v []byte) error) error
	// Count returns the number of keys in bucket.
	Count(bucket string) (int, error)
	// Buckets calls fn with the name of each child bucket of parent
	// ("tools" lists "tools/github" as "github"), in order; parent ""
	// lists the top-level buckets.
	Buckets(parent string, fn func(name string) error) error
	// DeleteBucket deletes bucket, its keys and its children.
	DeleteBucket(bucket string) error

	// PutSecret and GetSecret are Put and Get for values that must not be
	// readable from the store alone (tokens, client secrets, UI sessions):
	// with a store key they are sealed with AES-GCM, bound to bucket and key.
	PutSecret(bucket string, key, value []byte) error
	GetSecret(bucket string, key []byte) ([]byte, error)

	// Lock holds name until the transaction ends, against every other
	// transaction holding it on any instance. Update or Batch only.
	Lock(name string) error
	// Publish announces msg on topic once the transaction commits (see
	// Watch). Messages are small: at most MaxMessage bytes.
	Publish(topic string, msg []byte) error
	// Alive reports whether instance is running now. A record an instance
	// left that is not alive is from a process that died.
	Alive(instance string) (bool, error)
}

// MaxMessage bounds a published message (PostgreSQL's NOTIFY payload, less
// the envelope).
const MaxMessage = 6000

// ErrStop ends a Scan early without an error.
var ErrStop = errors.New("stop scan")

// Event is a published message as a watcher sees it.
type Event struct {
	Topic    string
	Msg      []byte
	Instance string // who published it
	// Resync: messages may have been missed (the store was unreachable);
	// the watcher reloads what it holds. Msg is nil.
	Resync bool
}

// Mine reports whether this instance published e.
func (e Event) Mine(s Store) bool { return !e.Resync && e.Instance == s.Instance() }
