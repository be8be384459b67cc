package gateway

import (
	"maps"
	"slices"
	"sync"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/upstream"
)

// registry is the set of live upstream connections, one per configured
// server that is not disabled, and the servers configured as disabled.
type registry struct {
	opts upstream.Options // what each connection starts with

	mu       sync.RWMutex
	conns    map[string]*upstream.Conn
	disabled map[string]bool // configured with "disabled": true
}

func newRegistry(opts upstream.Options) *registry {
	return &registry{opts: opts, conns: map[string]*upstream.Conn{}, disabled: map[string]bool{}}
}

func (r *registry) conn(server string) (*upstream.Conn, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.conns[server]
	return c, ok
}

func (r *registry) isDisabled(server string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.disabled[server]
}

// live is server's connection, or the refusal saying why there is none.
func (r *registry) live(server string) (*upstream.Conn, error) {
	r.mu.RLock()
	c, ok := r.conns[server]
	disabled := r.disabled[server]
	r.mu.RUnlock()
	switch {
	case ok:
		return c, nil
	case disabled:
		return nil, refuse(CodeUnavailable, "Server %q is disabled in the config, so nothing was sent. To use it, %s.", server, DisabledHelp)
	}
	return nil, refuse(CodeUnavailable, "Server %q is not configured. See the configured servers with: warden servers list", server)
}

// names are the live servers, sorted.
func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.conns))
}

// change is what reconciling the registry with a config did.
type change struct {
	gone    []*upstream.Conn // ended: removed, or replaced by a new connection
	started []string         // new connections, and those given a new policy
}

// reconcile makes the connections match servers: new ones start, removed
// or disabled ones are removed (their HTTP sessions deleted), changed ones
// restart, unchanged ones are not touched. Old connections end before new
// ones start: a restarted stdio server never runs twice, and the old one's
// last state cannot land after the new one's first.
func (r *registry) reconcile(servers map[string]*config.Server) change {
	disabled := map[string]bool{}
	for name, cfg := range servers {
		if cfg.Disabled {
			disabled[name] = true
		}
	}
	var ch change
	var remove, stop []*upstream.Conn
	replaced := map[string]*upstream.Conn{}
	r.mu.Lock()
	// Until the connections have changed, a server being disabled or
	// enabled counts as disabled: a call to it is never told it is not
	// configured.
	maps.Copy(r.disabled, disabled)
	for name, c := range r.conns {
		cfg, ok := servers[name]
		switch {
		case !ok || cfg.Disabled:
			remove = append(remove, c)
			delete(r.conns, name)
		case cfg.Equal(c.Config()):
		case cfg.SameConnection(c.Config()):
			c.SetConfig(cfg) // policy only: no reconnect
			ch.started = append(ch.started, name)
		default:
			if cfg.Fingerprint() != c.Config().Fingerprint() {
				remove = append(remove, c) // a different upstream: end its session
			} else {
				stop = append(stop, c)
			}
			replaced[name] = c
			delete(r.conns, name)
		}
	}
	r.mu.Unlock()

	var wg sync.WaitGroup
	for _, c := range remove {
		wg.Go(c.Remove)
	}
	for _, c := range stop {
		wg.Go(c.Stop)
	}
	wg.Wait()

	r.mu.Lock()
	r.disabled = disabled
	for name, cfg := range servers {
		if _, ok := r.conns[name]; ok || cfg.Disabled {
			continue
		}
		c := upstream.Start(cfg, r.opts)
		if old := replaced[name]; old != nil {
			c.Adopt(old) // clients' resource subscriptions carry on
		}
		r.conns[name] = c
		ch.started = append(ch.started, name)
	}
	r.mu.Unlock()
	ch.gone = append(remove, stop...)
	return ch
}

// stopAll stops every connection, keeping HTTP sessions for the next start.
func (r *registry) stopAll() {
	r.mu.Lock()
	conns := r.conns
	r.conns = map[string]*upstream.Conn{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(c.Stop)
	}
	wg.Wait()
}
