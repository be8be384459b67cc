// Package activity is Warden's activity log: one entry per tool call (time,
// surface, server, tool, class, argument hash, outcome, latency, and what a
// refusal or error said), never the arguments themselves nor a result.
// What an error said is masked for credentials (guardrails.MaskSecrets) by
// the writer, before anything is stored; it may still quote other data a
// server chose to put in its error.
//
// Add is on the call path and never blocks: it hands the entry to a buffered
// channel and, when the buffer is full, drops it and counts the drop. One
// writer goroutine drains the channel and writes many entries per store
// transaction, then enforces retention (at most maxEntries, none older than
// maxAge).
//
// While the store is unreachable the writer keeps the entries it could not
// store, up to maxEntries and DefaultHeldBytes, dropping the oldest beyond,
// and stores them with their own times and keys at the store's next Resync
// or next write, whichever comes first. Entries the bounds dropped are
// counted (Lost) and one entry with OutcomeLost says how many.
//
// Every instance sharing the store writes to the one log. Keys are the entry
// time (big-endian Unix nanoseconds), then 8 bytes of the instance's name
// hashed, then a big-endian sequence: iteration is in time order and two
// instances' keys never collide. (Keys of the versions before, time and
// sequence only, still read and age out.)
package activity

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenmcp/warden/guardrails"
	"github.com/wardenmcp/warden/internal/canon"
	"github.com/wardenmcp/warden/store"
)

// Outcomes.
const (
	OutcomeOK      = "ok"
	OutcomeError   = "error"
	OutcomeRefused = "refused" // Code holds the refusal code, e.g. WRITES_LATCHED
	OutcomeUnknown = "unknown" // cancelled, timed out or upstream lost after dispatch
	// OutcomeLost is not a call: it stands for entries an outage of the
	// store made the writer drop, Error says how many.
	OutcomeLost = "lost"
)

// Entry is one tool call.
type Entry struct {
	At         time.Time `json:"at"`
	Surface    string    `json:"surface"`
	Server     string    `json:"server"`
	Tool       string    `json:"tool"`
	Class      string    `json:"class"`
	ArgsSHA256 string    `json:"args_sha256"`
	// Args, when set, are hashed into ArgsSHA256 by the writer, off the call
	// path, and dropped: they are never stored.
	Args    json.RawMessage `json:"-"`
	Outcome string          `json:"outcome"`
	Code    string          `json:"code,omitempty"`
	// Error is what a refusal, an error or an unknown outcome said (a
	// refusal's text, the error result's text, the JSON-RPC error); the
	// writer masks the credentials in it and cuts it to MaxError bytes
	// before it is stored. Empty for a call that succeeded.
	Error         string `json:"error,omitempty"`
	LatencyMicros int64  `json:"latency_micros"`
	// Instance is the instance that served the call (store.Store.Instance),
	// set by the writer.
	Instance string `json:"instance,omitempty"`
	// User is the caller its token named (a user, else a client of the
	// config's "clients"); empty without known callers.
	User string `json:"user,omitempty"`
	// Task: the call ran as a task (the tasks extension), its client
	// answered with a task handle rather than waiting.
	Task bool `json:"task,omitempty"`
}

// Defaults used when Open gets a non-positive bound.
const (
	DefaultMaxEntries = 10000
	DefaultMaxAge     = 30 * 24 * time.Hour
	bufferSize        = 4096
	maxBatch          = 1024
)

const (
	bucketName = "activity_log"
	// watchTopic is watched for its Resync only: the store is back.
	watchTopic = "activity"
	// recountEvery bounds how long the writer trusts its own count of the
	// log: other instances add entries it does not see.
	recountEvery = time.Minute
)

type item struct {
	e     Entry
	flush chan struct{} // non-nil: a Flush marker, closed once everything before it is written
}

// Log is the activity log. Add, Flush, Query and Dropped are safe for
// concurrent use.
type Log struct {
	st         store.Store
	instance   string
	keyID      [8]byte // the instance's part of every key
	maxEntries int
	maxAge     time.Duration
	now        func() time.Time
	beforeTx   func() // test hook, runs in the writer before each batch's transaction

	ch        chan *item    // of pointers: one of values holds room for bufferSize entries (about 1 MB) from the start
	kick      chan struct{} // a Flush is queued: write now
	retry     chan struct{} // the store is back: store what is held
	stopWatch func()
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool

	dropped    atomic.Uint64
	writeErrs  atomic.Uint64
	lost       atomic.Uint64
	held       held      // writer goroutine only
	seq        uint64    // writer goroutine only
	count      int       // entries in the log as of counted plus this instance's since; writer goroutine only (after Open)
	counted    time.Time // when count was last read from the store; writer goroutine only
	lastCommit time.Time // writer goroutine only
}

type options struct {
	buffer    int
	heldBytes int
	beforeTx  func()
	now       func() time.Time
}

// Open starts the log on st (bucket "activity_log"). maxEntries <= 0 and
// maxAge <= 0 select DefaultMaxEntries and DefaultMaxAge. Retention is applied
// once at Open and after every batch; the log is counted at Open and at most
// every recountEvery after, so with several instances it may pass
// maxEntries by what the others wrote since.
func Open(st store.Store, maxEntries int, maxAge time.Duration) (*Log, error) {
	return open(st, maxEntries, maxAge, options{})
}

func open(st store.Store, maxEntries int, maxAge time.Duration, o options) (*Log, error) {
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if o.buffer <= 0 {
		o.buffer = bufferSize
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.heldBytes <= 0 {
		o.heldBytes = DefaultHeldBytes
	}
	l := &Log{
		st: st, instance: st.Instance(), maxEntries: maxEntries, maxAge: maxAge, now: o.now, beforeTx: o.beforeTx,
		ch: make(chan *item, o.buffer), kick: make(chan struct{}, 1), retry: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}),
		held: held{maxBytes: o.heldBytes, maxEntries: maxEntries},
		// Sequences start at the time, so a restarted instance of the same
		// name does not reuse one.
		seq: uint64(o.now().UnixNano()),
	}
	sum := sha256.Sum256([]byte(l.instance))
	copy(l.keyID[:], sum[:])
	err := st.Update(context.Background(), func(tx store.Tx) error {
		l.counted = time.Time{} // fn may run again: count again
		return l.retain(tx)
	})
	if err != nil {
		return nil, fmt.Errorf("activity: open: %w", err)
	}
	l.stopWatch = st.Watch(watchTopic, func(e store.Event) {
		if e.Resync {
			select {
			case l.retry <- struct{}{}:
			default:
			}
		}
	})
	go l.run()
	return l, nil
}

// Add queues e for writing without blocking. A zero e.At is set to now. When
// the buffer is full (the writer is behind) or the log is closed, e is dropped
// and counted in Dropped.
func (l *Log) Add(e Entry) {
	if l.closed.Load() {
		l.dropped.Add(1)
		return
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	select {
	case l.ch <- &item{e: e}:
	default:
		l.dropped.Add(1)
	}
}

// Dropped counts entries Add dropped because the buffer was full or the log
// closed.
func (l *Log) Dropped() uint64 { return l.dropped.Load() }

// WriteErrors counts entries lost because their transaction failed for
// another reason than the store being unreachable.
func (l *Log) WriteErrors() uint64 { return l.writeErrs.Load() }

// Lost counts entries dropped while the store was unreachable, beyond what
// the writer keeps until it is back.
func (l *Log) Lost() uint64 { return l.lost.Load() }

// Flush returns once every entry Added before it was called is written,
// dropped, or held because the store is unreachable. It blocks while the writer is stalled; it is for tests and
// shutdown, not the call path. After Close it returns at once.
func (l *Log) Flush() {
	if l.closed.Load() {
		return
	}
	c := make(chan struct{})
	select {
	case l.ch <- &item{flush: c}:
	case <-l.done:
		return
	}
	select {
	case l.kick <- struct{}{}: // end the writer's wait for the commit gap
	default:
	}
	select {
	case <-c:
	case <-l.done:
	}
}

// Close writes what is queued (and what an outage held, if the store is
// back) and stops the writer. Entries Added after (or racing with) Close
// may be lost.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		l.stopWatch()
		close(l.quit)
	})
	<-l.done
	return nil
}

func (l *Log) run() {
	defer close(l.done)
	batch := make([]*item, 0, maxBatch)
	for {
		select {
		case it := <-l.ch:
			l.write(l.gather(append(batch[:0], it)))
		case <-l.retry:
			l.write(nil)
		case <-l.quit:
			for {
				b := l.fill(batch[:0])
				if len(b) == 0 && !l.held.pending() {
					return
				}
				l.write(b)
				if len(b) == 0 {
					return // the held entries had their last try
				}
			}
		}
	}
}

// minCommitGap spaces the writer's transactions: an entry that arrives soon
// after a commit waits for the gap to pass, gathering the entries behind
// it, so a busy gateway makes at most ~10 commits (and fsyncs) a second,
// while an idle one writes each entry at once.
const minCommitGap = 100 * time.Millisecond

// gather waits until minCommitGap has passed since the last commit, then
// takes what arrived meanwhile, up to maxBatch; a Flush ends the wait.
func (l *Log) gather(batch []*item) []*item {
	wait := minCommitGap - time.Since(l.lastCommit)
	if wait <= 0 || batch[len(batch)-1].flush != nil {
		return l.fill(batch)
	}
	// Entries queue in the channel meanwhile: not receiving them one by
	// one spares the call path a goroutine wake-up per call.
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-l.kick:
	case <-l.quit:
	}
	return l.fill(batch)
}

// fill appends what is queued, without waiting, up to maxBatch items.
func (l *Log) fill(batch []*item) []*item {
	for len(batch) < maxBatch {
		select {
		case it := <-l.ch:
			batch = append(batch, it)
		default:
			return batch
		}
	}
	return batch
}

// write stores a batch, after what an outage held, in one transaction,
// applies retention, then releases the Flush markers it contains. When the
// store is unreachable the batch is held for the next try.
func (l *Log) write(batch []*item) {
	if l.beforeTx != nil {
		l.beforeTx()
	}
	recs := l.records(batch)
	if len(recs) > 0 || l.held.pending() {
		all := l.held.with(recs, l.instance)
		count, counted := l.count, l.counted
		err := l.st.Update(context.Background(), func(tx store.Tx) error {
			l.count, l.counted = count, counted // fn may run again
			for _, r := range all {
				if err := tx.Put(bucketName, r.key, r.value); err != nil {
					return err
				}
			}
			l.count += len(all)
			return l.retain(tx)
		})
		switch {
		case err == nil:
			l.held.clear()
		case errors.Is(err, store.ErrUnavailable):
			l.count, l.counted = count, counted // the transaction rolled back (or its commit is unknown: the recount mends)
			l.lost.Add(uint64(l.held.keep(recs)))
		default:
			l.count, l.counted = count, counted
			l.writeErrs.Add(uint64(len(l.held.recs) + len(recs)))
			l.held.clear()
		}
		l.lastCommit = time.Now()
	}
	for _, it := range batch {
		if it.flush != nil {
			close(it.flush)
		}
	}
}

// records turns a batch's entries into what is stored: the arguments
// hashed and dropped, the error masked, the instance set, and each its key.
func (l *Log) records(batch []*item) []record {
	var recs []record
	for _, it := range batch {
		if it.flush != nil {
			continue
		}
		if len(it.e.Args) > 0 && it.e.ArgsSHA256 == "" {
			it.e.ArgsSHA256 = canon.ArgsSHA256(it.e.Args)
		}
		it.e.Args = nil
		it.e.Error = Masked(it.e.Error)
		it.e.Instance = l.instance
		v, err := json.Marshal(&it.e)
		if err != nil {
			l.writeErrs.Add(1)
			continue
		}
		l.seq++
		recs = append(recs, record{key: l.key(it.e.At), value: v})
	}
	return recs
}

// MaxError bounds an entry's Error, in bytes. Callers may cut what they
// hand over to MaxErrorRead: Masked reads no more.
const (
	MaxError     = 512
	MaxErrorRead = 4096
)

// Masked is s as an entry keeps it: its first MaxErrorRead bytes, each
// credential in them masked, cut to MaxError bytes (whole runes). Masking
// comes before the cut, so a cut cannot hide a credential from it.
func Masked(s string) string {
	if s == "" {
		return ""
	}
	s = guardrails.MaskSecrets(strings.ToValidUTF8(s[:min(len(s), MaxErrorRead)], "\uFFFD"))
	if len(s) > MaxError {
		s = strings.ToValidUTF8(s[:MaxError], "") + "…"
	}
	return s
}

// key is the next key for an entry at at: time, instance, sequence.
func (l *Log) key(at time.Time) []byte {
	k := make([]byte, 24)
	binary.BigEndian.PutUint64(k, uint64(max(at.UnixNano(), 0)))
	copy(k[8:], l.keyID[:])
	binary.BigEndian.PutUint64(k[16:], l.seq)
	return k
}

// keyTime is the time a key starts with.
func keyTime(k []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(k))) }

// retain deletes the oldest entries beyond maxEntries and every entry older
// than maxAge. Keys start with the time, so both are a prefix of the bucket.
// It counts the log when the count is older than recountEvery (or was never
// taken); in between, it trusts its own.
func (l *Log) retain(tx store.Tx) error {
	now := l.now()
	if l.counted.IsZero() || now.Sub(l.counted) >= recountEvery {
		n, err := tx.Count(bucketName)
		if err != nil {
			return err
		}
		l.count, l.counted = n, now
	}
	cutoff := now.Add(-l.maxAge).UnixNano()
	excess := l.count - l.maxEntries
	var del [][]byte
	err := tx.Scan(bucketName, nil, false, func(k, _ []byte) error {
		old := len(k) < 8 || keyTime(k).UnixNano() < cutoff
		if !old && len(del) >= excess {
			return store.ErrStop
		}
		del = append(del, append([]byte(nil), k...))
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range del {
		if err := tx.Delete(bucketName, k); err != nil {
			return err
		}
	}
	l.count -= len(del)
	return nil
}

// Filter picks entries: each field not "" must equal the entry's.
type Filter struct{ Server, User string }

// Query returns up to limit written entries that f picks, newest first;
// limit <= 0 means no limit. Entries still queued are not seen
// (Flush first to see them).
func (l *Log) Query(f Filter, limit int) ([]Entry, error) {
	out := []Entry{} // none is an empty list, not null, in JSON
	err := l.st.View(context.Background(), func(tx store.Tx) error {
		return tx.Scan(bucketName, nil, true, func(k, v []byte) error {
			var e Entry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("entry %x: %w", k, err)
			}
			if f.Server != "" && e.Server != f.Server || f.User != "" && e.User != f.User {
				return nil
			}
			out = append(out, e)
			if limit > 0 && len(out) >= limit {
				return store.ErrStop
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("activity: query: %w", err)
	}
	return out, nil
}
