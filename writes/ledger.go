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
//	in, err := ledger.Begin(ctx, call) // the admission across instances, durable (intent.go); on error send nothing
//	defer in.End()                     // once the outcome is known or latched
//	send the request upstream          // the dispatch boundary
//	p.Release()                        // right after the bytes are written / body sent
//	wait for the answer
//	if outcome unknown && was dispatched { ledger.Record(latch, in) } // never while holding p
//
// Record takes the gate's write side, so it waits for every admitted call to
// reach its dispatch boundary, and calls that arrive meanwhile wait and then
// see the latch. When Record returns, the record is committed and no new call
// can dispatch. Calls admitted before the first Record may end unknown too:
// each is recorded, since each may need checking upstream, and Clear lifts
// them all. Release the permit promptly: it is held only across the
// send, which the transport bounds, never across the wait for the answer,
// and never while calling Record for the same server (that would deadlock).
// Read calls never touch the gate, Check or Record.
//
// The latch is durable: Record commits before it returns. The store holds
// one key per latched server (bucket "write_latches"): the JSON object of its
// one latch (the format of earlier versions, which still reads) or a JSON
// array of several.
//
// # Across instances
//
// Instances sharing a store share the latches; memory is a cache and the
// store decides. Begin is the admission: one transaction that takes the
// server's lock (store.Tx.Lock "writes/<server>"), reads the server's stored
// latches and refuses if there are any, turns the server's intents left by
// instances that are not alive into latches and refuses, and otherwise
// writes the call's intent. Record and Clear take the same lock, so a latch
// recorded anywhere is seen by every admission after it. Each change is
// published (topic "latches"), and every instance reloads that server's
// latches into its gates, so Admit and the observers follow within the
// store's event delay. The daemon's sweep (RecoverDead) latches dead
// instances' calls without waiting for an admission. While the store cannot
// be reached Begin and Clear fail (store.ErrUnavailable: STORE_UNAVAILABLE
// to the caller), and a latch Record cannot store is kept in memory and
// stored once the store is back, before other instances see this one alive
// again (store.Store.OnRejoin): until then they take its calls in flight
// for a dead instance's and latch them, never for a live one's. When a
// commit failed but the instance never lost the store, the daemon's sweep
// (RecoverDead, every few seconds) stores it.
package writes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/store"
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
	// A task its upstream ran was left by its client until it expired,
	// and the upstream did not say it had finished.
	ReasonAbandoned Reason = "task_abandoned"
)

// Latch is the record of a non-read call whose outcome is unknown: what a
// person needs to find the call upstream and check whether it happened.
// It holds the arguments' hash (canon.ArgsSHA256), names and sizes, never
// their values unless the tool's config says recordArgs (see details.go).
// Records of earlier versions lack the fields from SentAt on.
type Latch struct {
	Server     string    `json:"server"`
	Tool       string    `json:"tool"`
	ArgsSHA256 string    `json:"args_sha256"`
	At         time.Time `json:"at"` // when the outcome became unknown
	Reason     Reason    `json:"reason"`
	Surface    string    `json:"surface"` // the endpoint the call came on (gateway.Call.Surface)

	SentAt      time.Time `json:"sent_at,omitzero"` // when the call was written down to be sent
	Client      Caller    `json:"client,omitzero"`
	Args        []Arg     `json:"args,omitempty"`
	ArgsOmitted int       `json:"args_omitted,omitempty"` // arguments beyond MaxArgs, not listed
}

// The store's names: the latches by server, the lock of a server's latches
// and intents, and the topic announcing a server's latches changed.
const (
	latchBucket = "write_latches"
	topic       = "latches"
)

func lockName(server string) string { return "writes/" + server }

// Ledger holds the latches, in memory for the call path and in the store
// for durability and for the other instances. All methods are safe for
// concurrent use.
type Ledger struct {
	st        store.Store
	seq       atomic.Uint64 // the last intent's number, this run
	stopWatch func()

	mu      sync.Mutex                             // guards writes to servers and the observers
	servers atomic.Pointer[map[string]*serverGate] // copy on write; read without locks
	obs     []func(server string, latched bool)

	flushMu sync.Mutex // one flush at a time: each strikes off the ended calls it read

	endMu  sync.Mutex
	closed bool           // Close was called: no more intents are struck off
	ending sync.WaitGroup // intents being struck off
	ended  [][]byte       // intents of calls that ended, not struck off: the store was unreachable
}

type serverGate struct {
	gate    sync.RWMutex            // read side: admitted calls until dispatch; write side: Record, Clear, reload
	latches atomic.Pointer[[]Latch] // nil when not latched, else oldest first; the pointee is never modified
	unsaved []unsaved               // recorded while the store could not be reached; guarded by gate's write side
	pending atomic.Bool             // unsaved is not empty: read without the gate by flush
}

// unsaved is a latch Record could not store, and its call's intent.
type unsaved struct {
	latch  Latch
	intent []byte // nil for none
}

func (g *serverGate) first() *Latch {
	if ls := g.latches.Load(); ls != nil {
		return &(*ls)[0]
	}
	return nil
}

// set stores ls (none: nil) as the gate's latches and reports whether that
// changed how many there are.
func (g *serverGate) set(ls []Latch) bool {
	var old []Latch
	if p := g.latches.Load(); p != nil {
		old = *p
	}
	if len(ls) == 0 {
		g.latches.Store(nil)
	} else {
		g.latches.Store(&ls)
	}
	return len(old) != len(ls)
}

// Open loads the latches in st. A stored record that cannot be decoded still
// latches its server. Calls written down (Begin) and never struck off, by
// this instance or by one no longer alive, latch their servers now. The
// ledger follows the latches other instances record and clear until Close.
func Open(st store.Store) (*Ledger, error) {
	l := &Ledger{st: st}
	l.seq.Store(uint64(time.Now().UnixNano())) // unique across runs should an instance keep its name
	l.servers.Store(&map[string]*serverGate{})
	if _, err := l.recoverIntents(context.Background(), true); err != nil {
		return nil, fmt.Errorf("writes: open ledger: %w", err)
	}
	stopWatch, stopRejoin := st.Watch(topic, l.changed), st.OnRejoin(l.flush)
	l.stopWatch = func() { stopWatch(); stopRejoin() }
	if err := l.reloadAll(); err != nil {
		l.stopWatch()
		return nil, fmt.Errorf("writes: open ledger: %w", err)
	}
	return l, nil
}

// decodeLatches reads a server's stored latches: an array, or the single
// object earlier versions wrote. What cannot be decoded still latches the
// server (fail closed).
func decodeLatches(server string, v []byte) []Latch {
	var ls []Latch
	if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
		if json.Unmarshal(v, &ls) != nil {
			ls = nil
		}
	} else {
		var lt Latch
		if json.Unmarshal(v, &lt) == nil {
			ls = []Latch{lt}
		}
	}
	if len(ls) == 0 {
		ls = []Latch{{}}
	}
	for i := range ls {
		ls[i].Server = server
	}
	return ls
}

// getLatches reads a server's stored latches (none: nil).
func getLatches(tx store.Tx, server string) ([]Latch, error) {
	v, err := tx.Get(latchBucket, []byte(server))
	if v == nil || err != nil {
		return nil, err
	}
	return decodeLatches(server, v), nil
}

// putLatches stores a server's latches, one as the object earlier versions
// read, and announces the change.
func putLatches(tx store.Tx, server string, ls []Latch) error {
	var v []byte
	var err error
	if len(ls) == 1 {
		v, err = json.Marshal(ls[0])
	} else {
		v, err = json.Marshal(ls)
	}
	if err != nil {
		return err
	}
	if err := tx.Put(latchBucket, []byte(server), v); err != nil {
		return err
	}
	return tx.Publish(topic, []byte(server))
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

// changed follows a change announced by any instance (this one's too):
// the server's latches are read again; a Resync reads them all.
func (l *Ledger) changed(e store.Event) {
	if e.Resync {
		_ = l.reloadAll() // unreachable again: the next Resync retries
		return
	}
	_ = l.reload(string(e.Msg)) // the store's next Resync retries
}

// reload reads server's latches from the store into its gate. It holds the
// gate's write side, so that it cannot undo a Record or Clear of this
// instance that finished after its read.
func (l *Ledger) reload(server string) error {
	g := l.gateFor(server)
	g.gate.Lock()
	_, err := l.save(context.Background(), g, server)
	var ls []Latch
	if err == nil {
		err = l.st.View(context.Background(), func(tx store.Tx) (err error) {
			ls, err = getLatches(tx, server)
			return err
		})
	}
	changed := err == nil && g.set(ls)
	g.gate.Unlock()
	if changed {
		l.notify(server, len(ls) > 0)
	}
	return err
}

// save stores the latches recorded and not stored yet (holding g's write
// side), and answers the server's stored latches then (nil when there was
// nothing to store).
func (l *Ledger) save(ctx context.Context, g *serverGate, server string) ([]Latch, error) {
	if len(g.unsaved) == 0 {
		return nil, nil
	}
	var ls []Latch
	err := l.st.Update(ctx, func(tx store.Tx) (err error) {
		if ls, err = g.withUnsaved(tx, server); err != nil {
			return err
		}
		return putLatches(tx, server, ls)
	})
	if err != nil {
		return nil, err
	}
	g.unsaved = nil
	g.pending.Store(false)
	return ls, nil
}

// flush stores the latches recorded while the store failed and strikes off
// the calls that ended meanwhile. Until then another instance, seeing this
// one alive, reads those calls' intents as calls in flight and admits
// writes to a server latched here; so it runs when this instance reaches
// the store again after losing it, before the others can see it alive
// (store.Store.OnRejoin), and from RecoverDead, for a failure of a
// commit alone (the instance never lost the store).
func (l *Ledger) flush(ctx context.Context) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	for server, g := range *l.servers.Load() {
		if !g.pending.Load() {
			continue
		}
		g.gate.Lock()
		_, err := l.save(ctx, g, server)
		g.gate.Unlock()
		if err != nil {
			return err
		}
	}
	return l.strikeEnded(ctx)
}

// withUnsaved takes server's lock in tx and answers its stored latches and
// after them those recorded here and not stored yet (g's write side held),
// whose intents it strikes off.
func (g *serverGate) withUnsaved(tx store.Tx, server string) ([]Latch, error) {
	if err := tx.Lock(lockName(server)); err != nil {
		return nil, err
	}
	ls, err := getLatches(tx, server)
	if err != nil {
		return nil, err
	}
	for _, u := range g.unsaved {
		ls = append(ls, u.latch)
		if u.intent != nil {
			if err := tx.Delete(intentBucket, u.intent); err != nil {
				return nil, err
			}
		}
	}
	return ls, nil
}

// reloadAll reloads every server latched in the store or in memory.
func (l *Ledger) reloadAll() error {
	servers := map[string]bool{}
	for s := range *l.servers.Load() {
		servers[s] = true
	}
	err := l.st.View(context.Background(), func(tx store.Tx) error {
		return tx.Scan(latchBucket, nil, false, func(k, _ []byte) error {
			servers[string(k)] = true
			return nil
		})
	})
	if err != nil {
		return err
	}
	for s := range servers {
		if err := l.reload(s); err != nil {
			return err
		}
	}
	return nil
}

// Check reports the server's first latch. It reads memory only: no locks, no I/O,
// no allocation. It is a snapshot; to dispatch a non-read call use Admit.
func (l *Ledger) Check(server string) (Latch, bool) {
	if g := l.lookup(server); g != nil {
		if lt := g.first(); lt != nil {
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
// Permit and a copy of its first latch (refuse the call). Otherwise it returns a
// Permit that holds the server's gate until Release; while it is held, no
// Record for that server can complete. See the package doc for the sequence.
func (l *Ledger) Admit(server string) (Permit, *Latch) {
	g := l.gateFor(server)
	g.gate.RLock()
	if lt := g.first(); lt != nil {
		g.gate.RUnlock()
		c := *lt
		return Permit{}, &c
	}
	return Permit{g: g}, nil
}

// Record latches lt.Server with one more call of unknown outcome (a server
// already latched keeps its earlier ones too). It waits for admitted calls to
// reach their dispatch boundary, commits the record, and only then returns;
// calls admitted afterwards are refused, on every instance. A zero lt.At is
// set to now.
//
// The call's intent (in, nil for none) is struck off in the same commit, so
// that a crash cannot latch the call a second time at the next start.
//
// If the commit fails the server is latched in memory anyway (fail closed)
// and Record returns the error, which the caller must report. Never call
// Record while holding a Permit for the same server.
func (l *Ledger) Record(lt Latch, in *Intent) error {
	if lt.Server == "" {
		return errors.New("writes: record: empty server")
	}
	if lt.At.IsZero() {
		lt.At = time.Now()
	}
	lt.At, lt.SentAt = lt.At.Round(0), lt.SentAt.Round(0) // drop the monotonic reading; stored and loaded values compare equal
	g := l.gateFor(lt.Server)
	g.gate.Lock()
	var key []byte
	if in != nil {
		in.recorded.Store(true)
		key = in.key
	}
	g.unsaved = append(g.unsaved, unsaved{latch: lt, intent: key})
	g.pending.Store(true)
	ls, err := l.save(context.Background(), g, lt.Server) // with any earlier ones not stored yet
	if err != nil {                                       // fail closed: latched in memory, stored by the next reload or flush
		ls = []Latch{lt}
		if old := g.latches.Load(); old != nil {
			ls = append(slices.Clone(*old), lt)
		}
	}
	g.set(ls)
	g.gate.Unlock()
	l.notify(lt.Server, true)
	if err != nil {
		return fmt.Errorf("writes: record latch for %q (latched in memory only, stored once the store is back): %w", lt.Server, err)
	}
	return nil
}

// Clear removes the server's latches, on every instance, and answers them,
// oldest first (none when the server was not latched). The deletion is
// committed before the latch is lifted; if the commit fails the server stays
// latched. A clear of latches is recorded as the operator by's decision.
func (l *Ledger) Clear(server, by string) ([]Latch, error) {
	g := l.gateFor(server)
	g.gate.Lock()
	var ls []Latch
	err := l.st.Update(context.Background(), func(tx store.Tx) (err error) {
		if ls, err = g.withUnsaved(tx, server); err != nil || ls == nil {
			return err
		}
		if err := tx.Delete(latchBucket, []byte(server)); err != nil {
			return err
		}
		if err := decisions.Record(tx, l.st, decisions.Decision{Operator: by, Action: decisions.Clear, Server: server, Latches: len(ls)}); err != nil {
			return err
		}
		return tx.Publish(topic, []byte(server))
	})
	if err != nil {
		g.gate.Unlock()
		return nil, fmt.Errorf("writes: clear latch for %q: %w", server, err)
	}
	g.unsaved = nil
	g.pending.Store(false)
	changed := g.set(nil)
	g.gate.Unlock()
	if changed {
		l.notify(server, false)
	}
	return ls, nil
}

// List returns every latched call: by server, each server's oldest first.
func (l *Ledger) List() []Latch {
	m := *l.servers.Load()
	out := make([]Latch, 0, 4)
	for _, g := range m {
		if ls := g.latches.Load(); ls != nil {
			out = append(out, *ls...)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Server < out[j].Server })
	return out
}

// OnChange registers f, called after a latch is recorded (latched true) or
// cleared (false), here or on another instance. It runs synchronously on
// the recording or clearing goroutine, after the gate is released; keep it
// short (e.g. publish an event).
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
