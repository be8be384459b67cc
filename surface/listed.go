package surface

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// The surfaces' lists follow the gateway's one inventory per server: each
// change there has a version (gateway.Listing), the gateway tells the
// surfaces once per change, and update rebuilds a server's lists on every
// view once for all the changes it finds, recording the version they
// reflect, which WaitListed waits on.

// listed is the gateway version each server's lists reflect, with a signal
// for those waiting on it, and counts for tests.
type listed struct {
	mu      sync.Mutex
	at      map[string]uint64
	changed chan struct{} // closed and replaced whenever at changes

	told     atomic.Uint64 // Changed calls
	rebuilds atomic.Uint64 // servers' lists rebuilt by update
}

func newListed() listed {
	return listed{at: map[string]uint64{}, changed: make(chan struct{})}
}

func (l *listed) version(server string) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at[server]
}

func (l *listed) set(server string, version uint64) {
	l.mu.Lock()
	l.at[server] = version
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// WaitListed returns once server's lists, as every view serves them, reflect
// the gateway's version (gateway.Listed), or a later one; or ctx's error.
// The surfaces rebuild their lists off the gateway's path, so a client
// that lists right after the gateway took a listing may not see it yet:
// one that lists after this returns does.
func (s *Surfaces) WaitListed(ctx context.Context, server string, version uint64) error {
	for {
		s.listed.mu.Lock()
		at, changed := s.listed.at[server], s.listed.changed
		s.listed.mu.Unlock()
		if at >= version {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("server %s is listed at version %d, not yet %d: %w", server, at, version, ctx.Err())
		}
	}
}

// Changed marks server to be re-read (gateway.View). The lists are rebuilt
// off the caller's path (an approval, a discovery pass) and a storm of
// changes to one server costs one rebuild; policy never depends on the
// lists, since every call is checked in the gateway.
func (s *Surfaces) Changed(server string) {
	s.listed.told.Add(1)
	s.dirtyMu.Lock()
	s.dirty[server] = true
	s.dirtyMu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close stops rebuilding lists and following the store, and ends every
// view: its client sessions and its forwarding of resource updates.
func (s *Surfaces) Close() {
	close(s.done)
	if s.tasks != nil {
		s.tasks.close()
	}
	for _, stop := range s.unwatch {
		stop()
	}
	s.mu.Lock()
	servers := slices.Collect(maps.Keys(s.views))
	s.mu.Unlock()
	for _, server := range servers {
		s.forget(server)
	}
	for _, v := range []*view{s.agg, s.search} {
		v.closeAll()
		close(v.gone)
	}
}

// update rebuilds the lists of changed servers until Close. The version is
// read before the views re-read the gateway, so what they build is at
// least that recent; one the lists already reflect is not rebuilt.
func (s *Surfaces) update() {
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		s.dirtyMu.Lock()
		servers := s.dirty
		s.dirty = map[string]bool{}
		s.dirtyMu.Unlock()
		for server := range servers {
			version := s.g.Listed(server).Version
			if version <= s.listed.version(server) {
				continue
			}
			s.rebuild(server)
			s.listed.rebuilds.Add(1)
			s.listed.set(server, version)
		}
	}
}

// rebuild re-reads server on every view that shows it; a server removed
// from the config loses its own view.
func (s *Surfaces) rebuild(server string) {
	s.agg.Changed(server)
	if s.searchOn.Load() {
		s.search.Changed(server)
	}
	if _, live := s.g.LiveConfig(server); !live {
		s.forget(server) // removed: its endpoint answers 404 now
		return
	}
	if v := s.built(server); v != nil {
		v.Changed(server)
	}
}
