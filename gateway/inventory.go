package gateway

import (
	"sync"

	"github.com/wardenmcp/warden/events"
	"github.com/wardenmcp/warden/upstream"
)

// Listing is where a server's inventory stands, for a caller that waits on
// what clients are shown (see Surfaces.WaitListed).
type Listing struct {
	// Version increases with every change clients may see of the server:
	// a listing accepted, an approval or quarantine decision, a config
	// change of its tools, its start with pinned definitions, its removal.
	// Versions are the gateway's, over all servers: a server removed and
	// added again never goes back to an older one.
	Version uint64
	// Seq is the listing pass the records last accepted (upstream's
	// numbering), as of Version: one accepted and not yet versioned shows
	// with its version. 0 before the first, or while an on-demand server is
	// shown from its pinned definitions.
	Seq uint64
}

// inventories is each server's one inventory: the last listing the approval
// records accepted (the only copy anyone reads; upstream hands each listing
// over and keeps none), with its version.
type inventories struct {
	tell func(server string) // tells the views a server changed

	mu      sync.Mutex
	last    uint64 // the last version handed out
	by      map[string]*inventory
	pending map[string]*applying // servers with a listing being applied
}

type inventory struct {
	inv     *upstream.Inventory // nil: nothing listed, or forgotten
	pins    map[string]string   // inv's tools' hashes, by name: see approval's Check
	version uint64
	seq     uint64 // inv's Seq when it was versioned: what Listed answers with version
	shown   bool   // the views were last told of an inventory, not of none
}

// applying counts the listings of a server being applied, and whether an
// approval change arrived meanwhile: the listing tells the views of it.
type applying struct {
	n       int
	changed bool
}

func newInventories(tell func(server string)) *inventories {
	return &inventories{tell: tell, by: map[string]*inventory{}, pending: map[string]*applying{}}
}

func (s *inventories) entry(server string) *inventory {
	e := s.by[server]
	if e == nil {
		e = &inventory{}
		s.by[server] = e
	}
	return e
}

// inventory is server's last applied listing, or nil.
func (s *inventories) get(server string) *upstream.Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.by[server]; e != nil {
		return e.inv
	}
	return nil
}

// pinned is server's last applied listing with its tools' hashes, or nil.
func (s *inventories) pinned(server string) (*upstream.Inventory, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.by[server]; e != nil {
		return e.inv, e.pins
	}
	return nil, nil
}

// Listed is where server's inventory stands now.
func (g *Gateway) Listed(server string) Listing { return g.inv.listed(server) }

func (s *inventories) listed(server string) Listing {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.by[server]
	if e == nil {
		return Listing{}
	}
	// Seq as of the version, not the inventory accepted and not yet
	// versioned: a caller that saw the listing's Seq waits for its version.
	return Listing{Version: e.version, Seq: e.seq}
}

// Inventory applies a new listing to the approval records.
// Only a listing the records have taken is served: until then, and when a
// listing is refused (a duplicate or nameless tool), the last applied one
// stays, so a definition is never shown or run under an older approval.
// The views are told once, after the listing is in place, also of the
// approval changes it caused.
func (g peer) Inventory(server string, inv *upstream.Inventory) {
	c, ok := g.conn(server)
	if !ok {
		return
	}
	g.inv.beginApply(server)
	res, err := g.deps.Approvals.Apply(server, c.Config().Trusted, inv.Seq, inv.Tools)
	accepted := false
	switch {
	case err != nil:
		g.log.Error("tool listing refused; serving the last accepted one", "server", server, "err", err)
	case !res.Stale:
		accepted = g.inv.accept(server, inv, res.Pins)
	}
	if recordsChanged := g.inv.endApply(server); accepted || recordsChanged {
		if accepted {
			g.deps.Events.Publish(events.Event{Type: "list_changed", Server: server})
		}
		g.inv.changed(server)
	}
}

// accept makes inv, with its tools' hashes, server's inventory, unless a
// newer listing is in place.
func (s *inventories) accept(server string, inv *upstream.Inventory, pins map[string]string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entry(server); e.inv == nil || e.inv.Seq < inv.Seq {
		e.inv, e.pins = inv, pins
		return true
	}
	return false
}

// beginApply has approval changes of server wait for the listing being
// applied to tell the views (see approvalChanged).
func (s *inventories) beginApply(server string) {
	s.mu.Lock()
	a := s.pending[server]
	if a == nil {
		a = &applying{}
		s.pending[server] = a
	}
	a.n++
	s.mu.Unlock()
}

// endApply ends a listing's application, reporting whether an approval
// change of server was left for it to tell.
func (s *inventories) endApply(server string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.pending[server]
	changed := a.changed
	a.changed = false
	if a.n--; a.n == 0 {
		delete(s.pending, server)
	}
	return changed
}

// approvalChanged tells the views of a committed approval change, unless a
// listing of server is being applied: that one tells them once it is in
// place (its own discovery changes arrive here first, the listing after).
func (s *inventories) approvalChanged(server string) {
	s.mu.Lock()
	if a := s.pending[server]; a != nil {
		a.changed = true
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.changed(server)
}

// seed shows an on-demand server not yet run from its pinned definitions,
// unless something is listed already; the caller tells the views.
func (s *inventories) seed(server string, inv *upstream.Inventory, pins map[string]string) {
	s.mu.Lock()
	if e := s.entry(server); e.inv == nil {
		e.inv, e.pins = inv, pins
	}
	s.mu.Unlock()
}

// changed gives server a new version and tells the views, once per change;
// a server with nothing listed, whose views show nothing already, gives
// them nothing to redo (a server starting, before its first listing).
func (s *inventories) changed(server string) {
	s.mu.Lock()
	e := s.entry(server)
	if e.inv == nil && !e.shown {
		s.mu.Unlock()
		return
	}
	s.version(server, e)
}

// removed drops a removed server's inventory, gives it a new version and
// tells the views, which forget it (its own endpoint closes).
func (s *inventories) removed(server string) {
	s.mu.Lock()
	e := s.entry(server)
	e.inv, e.pins = nil, nil
	s.version(server, e)
}

// version versions e and tells the views of server; the caller holds s.mu,
// which version releases before the views re-read the gateway.
func (s *inventories) version(server string, e *inventory) {
	s.last++
	e.version = s.last
	e.shown = e.inv != nil
	e.seq = 0
	if e.inv != nil {
		e.seq = e.inv.Seq
	}
	s.mu.Unlock()
	s.tell(server)
}
