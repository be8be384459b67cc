// Package writes holds Warden's write classes and the unknown-outcome latch:
// once a non-read call's outcome is unknown, every further non-read call to
// that server is refused until an operator clears the latch.
//
// # The admission gate
//
// Checking the latch and then dispatching is a race: a call may pass the check
// just before another call records a latch and dispatch just after. Each
// server therefore has a gate (an RWMutex). Non-read calls use it so:
//
//	p, latched := ledger.Admit(server) // gate read side, then latch check
//	if latched != nil { refuse WRITES_LATCHED }   // gate already released
//	defer p.Release()                  // idempotent; covers every error path
//	in, err := ledger.Begin(call)      // durable (see intent.go); on error send nothing
//	defer in.End()                     // once the outcome is known or latched
//	send the request upstream          // the dispatch boundary
//	p.Release()                        // right after the bytes are written / body sent
//	wait for the answer
//	if outcome unknown && was dispatched { ledger.Record(latch) } // never while holding p
//
// Record takes the gate's write side, so it waits for every admitted call to
// reach its dispatch boundary, and calls that arrive meanwhile wait and then
// see the latch. When Record returns, the record is committed and no new call
// can dispatch. Release the permit promptly: it is held only across the
// send, which the transport bounds, never across the wait for the answer,
// and never while calling Record for the same server (that would deadlock).
// Read calls never touch the gate, Check or Record.
//
// The latch is durable: Record commits (bbolt fsyncs unless the DB was opened
// with NoSync, which Warden must not do) before it returns.
package writes

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Reason says why a call's outcome is unknown.
type Reason string

// The reasons a latch is recorded.
const (
	ReasonCancelled    Reason = "cancelled"
	ReasonTimeout      Reason = "timeout"
	ReasonUpstreamLost Reason = "upstream_lost"
	// The answer came but was larger than Warden passes on: the caller
	// cannot know what the call did.
	ReasonAnswerTooLarge Reason = "answer_too_large"
)

// Latch is the record of a non-read call whose outcome is unknown. It never
// holds the arguments, only their hash (canon.ArgsSHA256).
type Latch struct {
	Server     string    `json:"server"`
	Tool       string    `json:"tool"`
	ArgsSHA256 string    `json:"args_sha256"`
	At         time.Time `json:"at"`
	Reason     Reason    `json:"reason"`
	Surface    string    `json:"surface"`
}

var bucketName = []byte("write_latches")

// Ledger holds the latches, in memory for the call path and in bbolt for
// durability. All methods are safe for concurrent use.
type Ledger struct {
	db *bolt.DB

	mu      sync.Mutex                             // guards writes to servers and the observers
	servers atomic.Pointer[map[string]*serverGate] // copy on write; read without locks
	obs     []func(server string, latched bool)

	endMu  sync.Mutex
	closed bool           // Close was called: no more intents are struck off
	ending sync.WaitGroup // intents being struck off
}

type serverGate struct {
	gate  sync.RWMutex          // read side: admitted calls until dispatch; write side: Record, Clear
	latch atomic.Pointer[Latch] // nil when not latched; the pointee is never modified
}

// Open loads the latches stored in db (bucket "write_latches", created if
// missing). A stored record that cannot be decoded still latches its server.
// Calls written down (Begin) and never struck off latch their servers now.
func Open(db *bolt.DB) (*Ledger, error) {
	l := &Ledger{db: db}
	m := map[string]*serverGate{}
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketName)
		if err != nil {
			return err
		}
		err = b.ForEach(func(k, v []byte) error {
			lt := &Latch{}
			if json.Unmarshal(v, lt) != nil {
				lt = &Latch{} // fail closed: keep the server latched
			}
			lt.Server = string(k)
			g := &serverGate{}
			g.latch.Store(lt)
			m[lt.Server] = g
			return nil
		})
		if err != nil {
			return err
		}
		return recoverIntents(tx, b, m)
	})
	if err != nil {
		return nil, fmt.Errorf("writes: open ledger: %w", err)
	}
	l.servers.Store(&m)
	return l, nil
}

func (l *Ledger) lookup(server string) *serverGate {
	return (*l.servers.Load())[server]
}

func (l *Ledger) gateFor(server string) *serverGate {
	if g := l.lookup(server); g != nil {
		return g
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.servers.Load()
	if g := old[server]; g != nil {
		return g
	}
	m := make(map[string]*serverGate, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	g := &serverGate{}
	m[server] = g
	l.servers.Store(&m)
	return g
}

// Check reports the server's latch. It reads memory only: no locks, no I/O,
// no allocation. It is a snapshot; to dispatch a non-read call use Admit.
func (l *Ledger) Check(server string) (Latch, bool) {
	if g := l.lookup(server); g != nil {
		if lt := g.latch.Load(); lt != nil {
			return *lt, true
		}
	}
	return Latch{}, false
}

// Permit is an admitted non-read call's hold on its server's gate. Release it
// at the dispatch boundary. Do not copy a Permit.
type Permit struct {
	g    *serverGate // set once by Admit; nil for a refused call
	done uint32      // atomic: 1 once released
}

// Release lets Record proceed. It is idempotent and safe to call concurrently
// (for example from the transport's "sent" callback and from a defer); a zero
// Permit's Release does nothing.
func (p *Permit) Release() {
	if p.g != nil && atomic.CompareAndSwapUint32(&p.done, 0, 1) {
		p.g.gate.RUnlock()
	}
}

// Admit gates a non-read call. If the server is latched it returns a zero
// Permit and a copy of the latch (refuse the call). Otherwise it returns a
// Permit that holds the server's gate until Release; while it is held, no
// Record for that server can complete. See the package doc for the sequence.
func (l *Ledger) Admit(server string) (Permit, *Latch) {
	g := l.gateFor(server)
	g.gate.RLock()
	if lt := g.latch.Load(); lt != nil {
		g.gate.RUnlock()
		c := *lt
		return Permit{}, &c
	}
	return Permit{g: g}, nil
}

// Record latches lt.Server. It waits for admitted calls to reach their
// dispatch boundary, commits the record, and only then returns; calls
// admitted afterwards are refused. If the server is already latched the first
// record is kept and Record returns false. A zero lt.At is set to now.
//
// If the commit fails the server is latched in memory anyway (fail closed)
// and Record returns true with the error, which the caller must report.
// Never call Record while holding a Permit for the same server.
func (l *Ledger) Record(lt Latch) (recorded bool, err error) {
	if lt.Server == "" {
		return false, errors.New("writes: record: empty server")
	}
	if lt.At.IsZero() {
		lt.At = time.Now()
	}
	lt.At = lt.At.Round(0) // drop the monotonic reading; stored and loaded values compare equal
	g := l.gateFor(lt.Server)
	g.gate.Lock()
	if g.latch.Load() != nil {
		g.gate.Unlock()
		return false, nil
	}
	v, err := json.Marshal(lt)
	if err == nil {
		err = l.db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bucketName)
			if err != nil {
				return err
			}
			return b.Put([]byte(lt.Server), v)
		})
	}
	g.latch.Store(&lt)
	g.gate.Unlock()
	l.notify(lt.Server, true)
	if err != nil {
		return true, fmt.Errorf("writes: record latch for %q (latched in memory only): %w", lt.Server, err)
	}
	return true, nil
}

// Clear removes the server's latch and answers what was cleared (false when
// the server was not latched). The deletion is committed before the latch is
// lifted; if the commit fails the server stays latched.
func (l *Ledger) Clear(server string) (Latch, bool, error) {
	g := l.lookup(server)
	if g == nil {
		return Latch{}, false, nil
	}
	g.gate.Lock()
	lt := g.latch.Load()
	if lt == nil {
		g.gate.Unlock()
		return Latch{}, false, nil
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketName)
		if err != nil {
			return err
		}
		return b.Delete([]byte(server))
	})
	if err != nil {
		g.gate.Unlock()
		return Latch{}, false, fmt.Errorf("writes: clear latch for %q: %w", server, err)
	}
	g.latch.Store(nil)
	g.gate.Unlock()
	l.notify(server, false)
	return *lt, true, nil
}

// List returns the latches, sorted by server.
func (l *Ledger) List() []Latch {
	m := *l.servers.Load()
	out := make([]Latch, 0, 4)
	for _, g := range m {
		if lt := g.latch.Load(); lt != nil {
			out = append(out, *lt)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out
}

// OnChange registers f, called after a latch is recorded (latched true) or
// cleared (false). It runs synchronously on the recording or clearing
// goroutine, after the gate is released; keep it short (e.g. publish an event).
func (l *Ledger) OnChange(f func(server string, latched bool)) {
	l.mu.Lock()
	l.obs = append(l.obs, f)
	l.mu.Unlock()
}

func (l *Ledger) notify(server string, latched bool) {
	l.mu.Lock()
	obs := l.obs
	l.mu.Unlock()
	for _, f := range obs {
		f(server, latched)
	}
}
