package writes

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/wardenmcp/warden/store"
)

// Intents. A non-read call is written down, durably, before its request
// leaves Warden, and struck off once its outcome is known (or latched). One
// still written down when its instance is gone (kill -9, power loss) was in
// flight when it died: its outcome is unknown, so its server latches with
// ReasonInterrupted, at this instance's next Open, at the next admission to
// that server on any instance, or at another instance's RecoverDead.
//
// An intent's key names the server and the instance: server, 0, instance,
// 0, an 8-byte number. Earlier versions wrote server, 0, the number: such an
// intent is from a run that ended.

const intentBucket = "write_intents"

// ReasonInterrupted: Warden stopped (was killed) while the call was in
// flight.
const ReasonInterrupted Reason = "warden_interrupted"

// Intent is a non-read call written down before it is sent.
type Intent struct {
	l        *Ledger
	key      []byte
	recorded atomic.Bool // Record has it: struck off with its latch, never before
}

// LatchedError is Begin's refusal: the store holds a latch for the server
// (recorded by another instance, or just now for a call a dead instance left
// in flight). Nothing was written down; do not send the call.
type LatchedError struct{ Latch Latch }

func (e *LatchedError) Error() string {
	return fmt.Sprintf("writes to %q are latched", e.Latch.Server)
}

// Begin admits the call across instances and writes lt (the call, as its
// latch would read) down; it returns once that is committed. It refuses with
// a *LatchedError when the server is latched in the store. A call whose
// intent cannot be written must not be sent: when the store cannot be
// reached the error wraps store.ErrUnavailable. A zero lt.SentAt is set to
// now; a latch recovered from it is at that time.
func (l *Ledger) Begin(ctx context.Context, lt Latch) (*Intent, error) {
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
	self := l.st.Instance()
	key := binary.BigEndian.AppendUint64(intentPrefix(lt.Server, self), l.seq.Add(1))
	var latched []Latch
	err = l.st.Update(ctx, func(tx store.Tx) error {
		if err := tx.Lock(lockName(lt.Server)); err != nil {
			return err
		}
		var err error
		if latched, err = getLatches(tx, lt.Server); err != nil || latched != nil {
			return err
		}
		// Calls other instances left in flight when they died.
		if latched, err = latchLeftovers(tx, lt.Server, gone(tx, self, false)); err != nil || latched != nil {
			return err
		}
		return tx.Put(intentBucket, key, v)
	})
	if err != nil {
		return nil, fmt.Errorf("writes: writing down the call before sending it: %w", err)
	}
	if latched != nil {
		return nil, &LatchedError{Latch: latched[0]}
	}
	return &Intent{l: l, key: key}, nil
}

// intentPrefix is the start of the keys of server's intents; with instance,
// of that instance's.
func intentPrefix(server, instance string) []byte {
	k := append([]byte(server), 0)
	if instance != "" {
		k = append(append(k, instance...), 0)
	}
	return k
}

// intentInstance is the instance that wrote the intent at key (server's):
// "" for one of an earlier version.
func intentInstance(server string, key []byte) string {
	rest := key[len(server)+1:]
	if len(rest) <= 8 {
		return ""
	}
	return string(rest[:len(rest)-9])
}

// End strikes the call off, off the caller's path: a nil Intent does
// nothing, nor does one given to Record (struck off with its latch, and
// kept while that is not stored, lest another instance admit a write
// meanwhile). Until that is committed a crash latches the server, which
// errs on the safe side.
func (in *Intent) End() {
	if in == nil || in.recorded.Load() {
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
		// (Batch: strike-offs of concurrent calls share a commit.)
		err := l.st.Batch(context.Background(), func(tx store.Tx) error {
			return tx.Delete(intentBucket, in.key)
		})
		if err != nil { // struck off by flush; a crash first latches the server: safe
			l.endMu.Lock()
			l.ended = append(l.ended, in.key)
			l.endMu.Unlock()
		}
	}()
}

// strikeEnded strikes off the calls that ended while the store could not be
// reached.
func (l *Ledger) strikeEnded(ctx context.Context) error {
	l.endMu.Lock()
	keys := l.ended
	l.endMu.Unlock()
	if len(keys) == 0 {
		return nil
	}
	err := l.st.Update(ctx, func(tx store.Tx) error {
		for _, k := range keys {
			if err := tx.Delete(intentBucket, k); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		l.endMu.Lock()
		l.ended = l.ended[len(keys):]
		l.endMu.Unlock()
	}
	return err
}

// Close stops following other instances and waits until the calls that
// ended are struck off; call it before closing the store.
func (l *Ledger) Close() {
	l.stopWatch()
	l.endMu.Lock()
	l.closed = true
	l.endMu.Unlock()
	l.ending.Wait()
}

// latchLeftovers turns server's intents whose instance is gone (in tx,
// holding the server's lock) into latches, each call a latch of its own
// after those stored, and strikes them off. It answers the server's latches
// if it added any, else nil. An intent of an earlier version is always gone.
func latchLeftovers(tx store.Tx, server string, isGone func(instance string) (bool, error)) ([]Latch, error) {
	var found []Latch
	var keys [][]byte
	err := tx.Scan(intentBucket, intentPrefix(server, ""), false, func(k, v []byte) error {
		if inst := intentInstance(server, k); inst != "" {
			if g, err := isGone(inst); err != nil || !g {
				return err
			}
		}
		lt := Latch{}
		if json.Unmarshal(v, &lt) != nil {
			lt = Latch{} // fail closed: the server is latched all the same
		}
		lt.Server = server
		lt.Reason = ReasonInterrupted
		found = append(found, lt)
		keys = append(keys, bytes.Clone(k))
		return nil
	})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	for _, k := range keys {
		if err := tx.Delete(intentBucket, k); err != nil {
			return nil, err
		}
	}
	stored, err := getLatches(tx, server)
	if err != nil {
		return nil, err
	}
	ls := append(stored, found...)
	return ls, putLatches(tx, server, ls)
}

// RecoverDead latches the servers of the calls that instances no longer
// alive left in flight (kill -9, power loss), as an admission to those
// servers would (Begin), so that the latches show before anyone tries a
// write; this instance's calls are left alone. Run it now and then: it reads
// the intents once, and writes only for a server with such calls. It
// answers the servers latched, whose latches this ledger holds on return.
// First it stores what this instance could not (flush), so that a commit
// that failed alone leaves another instance admitting writes to a server
// latched here no longer than until this runs.
func (l *Ledger) RecoverDead(ctx context.Context) ([]string, error) {
	if err := l.flush(ctx); err != nil {
		return nil, fmt.Errorf("writes: storing the latches recorded while the store failed: %w", err)
	}
	servers, err := l.recoverIntents(ctx, false)
	for _, server := range servers {
		if err == nil {
			err = l.reload(server)
		}
	}
	if err != nil {
		return servers, fmt.Errorf("writes: latching the calls of instances that died: %w", err)
	}
	return servers, nil
}

// recoverIntents latches the servers of the calls written down and never
// struck off by instances not alive, and with mine by this instance (at
// Open: from its last run), each server in a transaction of its own that
// holds its lock. It answers the servers latched.
func (l *Ledger) recoverIntents(ctx context.Context, mine bool) ([]string, error) {
	self := l.st.Instance()
	var servers []string
	err := l.st.View(ctx, func(tx store.Tx) error {
		isGone := gone(tx, self, mine)
		return tx.Scan(intentBucket, nil, false, func(k, _ []byte) error {
			server, _, found := bytes.Cut(k, []byte{0})
			if !found || len(server) == 0 || len(servers) > 0 && servers[len(servers)-1] == string(server) {
				return nil
			}
			if inst := intentInstance(string(server), k); inst != "" {
				if g, err := isGone(inst); err != nil || !g {
					return err
				}
			}
			servers = append(servers, string(server))
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	var latched []string
	for _, server := range servers {
		var ls []Latch
		err := l.st.Update(ctx, func(tx store.Tx) (err error) {
			if err := tx.Lock(lockName(server)); err != nil {
				return err
			}
			ls, err = latchLeftovers(tx, server, gone(tx, self, mine))
			return err
		})
		if err != nil {
			return latched, err
		}
		if ls != nil {
			latched = append(latched, server)
		}
	}
	return latched, nil
}

// gone tells latchLeftovers which intents' instances are gone: those not
// alive, and with mine this instance's own (at Open: from its last run).
// It asks tx once per instance.
func gone(tx store.Tx, self string, mine bool) func(string) (bool, error) {
	known := map[string]bool{self: mine}
	return func(inst string) (bool, error) {
		if g, ok := known[inst]; ok {
			return g, nil
		}
		alive, err := tx.Alive(inst)
		if err != nil {
			return false, err
		}
		known[inst] = !alive
		return !alive, nil
	}
}
