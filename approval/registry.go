package approval

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenmcp/warden/store"
)

// Registry holds every server's approval state in memory, a cache of the
// store, which decides: writers serialize per server, in this process (a
// mutex) and across instances (a store lock, see update); readers use
// published snapshots. Changes other instances make arrive by Watch.
type Registry struct {
	st  store.Store
	now func() time.Time

	// servers is copy-on-write: addMu only guards adding an entry and is
	// never held while a server's records are read or written.
	addMu   sync.Mutex
	servers atomic.Pointer[map[string]*server]

	subsMu sync.RWMutex
	subs   []func(Change)

	// Test hooks. testHookAfterRead runs in every write transaction between
	// deciding and writing, with the server's locks held; testHookPut sees
	// every put.
	testHookAfterRead func(server string)
	testHookPut       func(bucket, key string)
}

// server is one server's state. mu serializes every read-modify-write of its
// meta and records; the fields below it are guarded by mu. view is the
// lock-free snapshot of them published after each commit.
type server struct {
	name string
	mu   sync.Mutex

	meta    serverMeta
	hasMeta bool
	tools   map[string]*ToolRecord // records are immutable once installed
	lastSeq uint64                 // in memory only: seq restarts with the process
	version uint64

	lastPass atomic.Int64 // unix nanos of the last applied pass
	view     atomic.Pointer[view]
}

// view is an immutable snapshot for readers.
type view struct {
	known   bool
	meta    serverMeta
	status  map[string]gate // present tools only
	records []*ToolRecord   // all records, sorted by name
	counts  Counts
}

// has reports whether the snapshot has a record of name with definition
// hash: its findings are made already.
func (v *view) has(name, hash string) bool {
	i, ok := slices.BinarySearchFunc(v.records, name, func(rec *ToolRecord, name string) int { return strings.Compare(rec.Name, name) })
	return ok && v.records[i].CurrentHash == hash
}

func (s *server) lock()   { s.mu.Lock() }
func (s *server) unlock() { s.mu.Unlock() }

func newServer(name string) *server {
	s := &server{name: name, tools: map[string]*ToolRecord{}}
	s.view.Store(&view{status: map[string]gate{}})
	return s
}

// publish rebuilds the snapshot from the guarded state. Caller holds s.mu.
func (s *server) publish() {
	v := &view{known: s.hasMeta, meta: s.meta, status: make(map[string]gate, len(s.tools)),
		records: make([]*ToolRecord, 0, len(s.tools))}
	for name, rec := range s.tools {
		v.records = append(v.records, rec)
		if !rec.Present {
			v.counts.Absent++
			continue
		}
		v.status[name] = gate{rec.Status, rec.ApprovedHash}
		switch rec.Status {
		case StatusPending:
			v.counts.Pending++
			if rec.HeldBack {
				v.counts.HeldBack++
			}
		case StatusApproved:
			v.counts.Approved++
		case StatusChanged:
			v.counts.Changed++
		case StatusBlocked:
			v.counts.Blocked++
		case StatusInvalid:
			v.counts.Invalid++
		}
	}
	slices.SortFunc(v.records, func(a, b *ToolRecord) int { return strings.Compare(a.Name, b.Name) })
	s.view.Store(v)
}

// Open loads every server's records from st and watches for other
// instances' changes for as long as st is open.
func Open(ctx context.Context, st store.Store) (*Registry, error) {
	if st == nil {
		return nil, errors.New("approval: Open needs an open store")
	}
	r := &Registry{st: st, now: func() time.Time { return time.Now().UTC().Round(0) }}
	m := map[string]*server{}
	err := st.View(ctx, func(tx store.Tx) error {
		names, err := storedServers(tx)
		if err != nil {
			return err
		}
		for _, name := range names {
			s := newServer(name)
			if _, err := r.reload(tx, s); err != nil {
				return err
			}
			m[name] = s
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.servers.Store(&m)
	st.Watch(topic, r.remote)
	if st.Shared() {
		// A change another instance committed after the load and before
		// the Watch was announced to no one here: read everything once more.
		r.remote(store.Event{Topic: topic, Resync: true})
	}
	return r, nil
}

// lookup returns the server or nil; no lock.
func (r *Registry) lookup(name string) *server {
	return (*r.servers.Load())[name]
}

// serverFor returns the server, adding an empty entry if needed. Only the
// map is copied under addMu; no server lock is taken.
func (r *Registry) serverFor(name string) *server {
	if s := r.lookup(name); s != nil {
		return s
	}
	r.addMu.Lock()
	defer r.addMu.Unlock()
	old := *r.servers.Load()
	if s := old[name]; s != nil {
		return s
	}
	m := make(map[string]*server, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	s := newServer(name)
	m[name] = s
	r.servers.Store(&m)
	return s
}

// gate is what Check reads of a present tool.
type gate struct {
	status Status
	pinned string // the approved definition's hash
}

// approvedOther reports whether the tool is approved with another
// definition than the one of hash.
func (g gate) approvedOther(hash string) bool { return g.status == StatusApproved && g.pinned != hash }

// Check is the per-call gate: the status of the tool as defined by hash
// (approval.Hash of the definition the caller would show or run), and
// whether it is in the server's latest inventory (an absent or unknown tool
// is not known). An approved tool whose definition is not the approved one
// is changed: the records say what the latest listing of any instance was,
// and this caller's may be another (a listing of another instance, or one
// applied after this caller read its own). It reads a published snapshot:
// no lock, no I/O, no allocation. A tool is callable only when Check says
// approved and Quarantined says false.
func (r *Registry) Check(server, tool, hash string) (Status, bool) {
	s := r.lookup(server)
	if s == nil {
		return "", false
	}
	g, ok := s.view.Load().status[tool]
	if g.approvedOther(hash) {
		return StatusChanged, ok
	}
	return g.status, ok
}

// ApprovedOther reports whether tool is approved with another definition
// than the one of hash: Check says changed only because the caller's
// listing differs from the one the records approved.
func (r *Registry) ApprovedOther(server, tool, hash string) bool {
	s := r.lookup(server)
	if s == nil {
		return false
	}
	return s.view.Load().status[tool].approvedOther(hash)
}

// Quarantined reports whether the server's tools are withheld. An unknown
// server counts as quarantined (fail closed).
func (r *Registry) Quarantined(server string) bool {
	s := r.lookup(server)
	if s == nil {
		return true
	}
	v := s.view.Load()
	return !v.known || v.meta.Quarantined
}

// Tools returns copies of the server's records, present or not, sorted by
// name; nil for an unknown server.
func (r *Registry) Tools(server string) []ToolRecord {
	s := r.lookup(server)
	if s == nil {
		return nil
	}
	v := s.view.Load()
	lp := s.lastPass.Load()
	last := time.Unix(0, lp).UTC()
	out := make([]ToolRecord, len(v.records))
	for i, rec := range v.records {
		out[i] = rec.clone()
		if rec.Present && lp != 0 && last.After(rec.LastSeen) {
			out[i].LastSeen = last
		}
	}
	return out
}

// Server returns a server's admission state and tool counts.
func (r *Registry) Server(name string) (ServerState, bool) {
	s := r.lookup(name)
	if s == nil {
		return ServerState{}, false
	}
	v := s.view.Load()
	if !v.known {
		return ServerState{}, false
	}
	return ServerState{Name: name, Quarantined: v.meta.Quarantined, QuarantinedBy: v.meta.QuarantinedBy,
		DecidedBy: v.meta.DecidedBy, Baselined: v.meta.Baselined, Counts: v.counts}, true
}

// Servers returns the names of all known servers, sorted.
func (r *Registry) Servers() []string {
	var out []string
	for name, s := range *r.servers.Load() {
		if s.view.Load().known {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// OnChange registers fn to run after every committed transaction that
// changed anything, outside any lock, on the committing goroutine; and
// after another instance's change was reloaded (Cause "sync"), on the
// store's watch goroutine.
func (r *Registry) OnChange(fn func(Change)) {
	r.subsMu.Lock()
	r.subs = append(r.subs, fn)
	r.subsMu.Unlock()
}

func (r *Registry) notify(chs ...*Change) {
	r.subsMu.RLock()
	subs := r.subs
	r.subsMu.RUnlock()
	for _, ch := range chs {
		if ch == nil {
			continue
		}
		for _, fn := range subs {
			fn(*ch)
		}
	}
}

// install makes meta (if non-nil) and recs, once committed, s's state and
// publishes a new snapshot. Caller holds s.mu.
func (r *Registry) install(s *server, meta *serverMeta, recs []*ToolRecord, cause string) *Change {
	wasQ := !s.hasMeta || s.meta.Quarantined
	nowQ := wasQ
	if meta != nil {
		nowQ = meta.Quarantined
	}
	ch := &Change{Server: s.name, Cause: cause, Quarantined: nowQ, QuarantineChanged: nowQ != wasQ}
	if nowQ && !wasQ { // entering quarantine: the visible set was whatever was visible
		for _, rec := range s.tools {
			if rec.visible(false) {
				ch.VisibleChanged = true
				break
			}
		}
	}
	for _, rec := range recs {
		old := s.tools[rec.Name]
		tc := ToolChange{Tool: rec.Name, To: rec.Status, Present: rec.Present}
		if old != nil {
			tc.From, tc.WasPresent = old.Status, old.Present
		}
		if old == nil || old.CurrentHash != rec.CurrentHash {
			tc.Findings, tc.Reason = rec.Findings, rec.Reason
		}
		if old.visible(wasQ) != rec.visible(nowQ) {
			ch.VisibleChanged = true
		}
		ch.Tools = append(ch.Tools, tc)
		s.tools[rec.Name] = rec
	}
	if meta != nil {
		s.meta, s.hasMeta = *meta, true
	}
	if !nowQ && wasQ { // leaving quarantine: the visible set is whatever is visible now
		for _, rec := range s.tools {
			if rec.visible(false) {
				ch.VisibleChanged = true
				break
			}
		}
	}
	slices.SortFunc(ch.Tools, func(a, b ToolChange) int { return strings.Compare(a.Tool, b.Tool) })
	s.version++
	ch.Version = s.version
	s.publish()
	return ch
}
