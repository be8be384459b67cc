package writes

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Intents. A non-read call is written down, durably, before its request
// leaves Warden, and struck off once its outcome is known (or latched). One
// still written down when Warden opens its store again was in flight when
// Warden died (kill -9, power loss): its outcome is unknown, so Open latches
// its server with ReasonInterrupted.

var intentBucket = []byte("write_intents")

// ReasonInterrupted: Warden stopped (was killed) while the call was in
// flight.
const ReasonInterrupted Reason = "warden_interrupted"

// Intent is a non-read call written down before it is sent.
type Intent struct {
	l   *Ledger
	key []byte
}

// Begin writes lt (the call, as its latch would read) down and returns once
// that is committed. A call whose intent cannot be written must not be sent.
// A zero lt.SentAt is set to now; a latch recovered from it is at that time.
func (l *Ledger) Begin(lt Latch) (*Intent, error) {
	if lt.SentAt.IsZero() {
		lt.SentAt = time.Now()
	}
	lt.SentAt = lt.SentAt.Round(0)
	lt.At = lt.SentAt
	lt.Reason = ReasonInterrupted
	v, err := json.Marshal(lt)
	if err != nil {
		return nil, err
	}
	// The key names the server, so that even a record that cannot be read
	// back latches it.
	var key []byte
	err = l.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(intentBucket)
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		key = binary.BigEndian.AppendUint64(append([]byte(lt.Server), 0), seq)
		return b.Put(key, v)
	})
	if err != nil {
		return nil, fmt.Errorf("writes: writing down the call before sending it: %w", err)
	}
	return &Intent{l: l, key: key}, nil
}

// End strikes the call off, off the caller's path: a nil Intent does
// nothing. Until that is committed a crash latches the server, which errs on
// the safe side.
func (in *Intent) End() {
	if in == nil {
		return
	}
	l := in.l
	l.endMu.Lock()
	defer l.endMu.Unlock()
	if l.closed {
		return // the store is closing: this call latches at the next start
	}
	l.ending.Add(1)
	go func() {
		defer l.ending.Done()
		// Should this fail, the server latches at the next start: safe.
		// (Batch: strike-offs of concurrent calls share a commit.)
		_ = l.db.Batch(func(tx *bolt.Tx) error {
			if b := tx.Bucket(intentBucket); b != nil {
				return b.Delete(in.key)
			}
			return nil
		})
	}()
}

// Close waits until the calls that ended are struck off; call it before
// closing the store.
func (l *Ledger) Close() {
	l.endMu.Lock()
	l.closed = true
	l.endMu.Unlock()
	l.ending.Wait()
}

// recoverIntents latches the servers of the calls written down and never
// struck off (in tx, while opening), each call a latch of its own, and
// clears them.
func recoverIntents(tx *bolt.Tx, latches *bolt.Bucket, m map[string][]Latch) error {
	b := tx.Bucket(intentBucket)
	if b == nil {
		return nil
	}
	changed := map[string]bool{}
	err := b.ForEach(func(k, v []byte) error {
		server, _, found := bytes.Cut(k, []byte{0})
		if !found || len(server) == 0 {
			return nil // not an intent: nothing to latch
		}
		lt := Latch{}
		if json.Unmarshal(v, &lt) != nil {
			lt = Latch{} // fail closed: the server is latched all the same
		}
		lt.Server = string(server)
		lt.Reason = ReasonInterrupted
		m[lt.Server] = append(m[lt.Server], lt)
		changed[lt.Server] = true
		return nil
	})
	if err != nil {
		return err
	}
	for server := range changed {
		if err := putLatches(latches, server, m[server]); err != nil {
			return err
		}
	}
	return tx.DeleteBucket(intentBucket)
}
