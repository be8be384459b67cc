// Package gateway is the one place every call passes through between the
// downstream surfaces (/mcp, /mcp/{server}, warden stdio, the CLI) and the
// upstream connections. Policy sits here: quarantine and tool approval, the
// unknown-outcome write latch, destructive-call confirmation, the activity
// log and metrics. It also owns the set of live upstream connections and
// routes each upstream's server-to-client traffic back to the right client.
package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/events"
	"github.com/wardenmcp/warden/metrics"
	"github.com/wardenmcp/warden/upstream"
	"github.com/wardenmcp/warden/writes"
)

// View is a downstream surface that shows what the gateway exposes.
type View interface {
	// Changed says what server exposes may have changed (tools, prompts,
	// resources, visibility); the view re-reads it from the gateway.
	Changed(server string)
	Log(server string, p *mcp.LoggingMessageParams)
	// ResourceUpdated goes only to sessions that subscribed to the
	// resource through server.
	ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams)
}

// Deps are the policy parts the gateway enforces.
type Deps struct {
	Approvals *approval.Registry
	Writes    *writes.Ledger
	Activity  *activity.Log
	Events    *events.Broker
	Metrics   *metrics.Metrics
	Logger    *slog.Logger
	Upstream  upstream.Options // Peer is set by the gateway
}

// Gateway is the call path and the registry of live upstreams.
type Gateway struct {
	deps   Deps
	log    *slog.Logger
	router *router

	mu       sync.RWMutex
	conns    map[string]*upstream.Conn
	disabled map[string]bool // configured with "disabled": true
	views    []View

	inv *inventories // what each server offers clients (inventory.go)

	// Calls in flight, so that stopping can let them finish or record them.
	callMu   sync.RWMutex
	closed   bool
	calls    sync.WaitGroup
	stopping context.Context
	stop     context.CancelFunc
}

// New returns a gateway with no servers; Reconcile starts them.
func New(deps Deps) *Gateway {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	g := &Gateway{deps: deps, log: deps.Logger, router: newRouter(), conns: map[string]*upstream.Conn{}, disabled: map[string]bool{}, inv: newInventories()}
	g.stopping, g.stop = context.WithCancel(context.Background())
	g.deps.Upstream.Peer = g
	g.deps.Upstream.Logger = deps.Logger
	g.deps.Upstream.NoticeDropped = func(server string) { deps.Metrics.NoticeDropped(server, "flood") }
	if g.deps.Upstream.Answers == nil {
		g.deps.Upstream.Answers = upstream.NewAnswers(upstream.DefaultAnswersTotal, upstream.DefaultAnswerMax, deps.Metrics.AnswerBytes)
	}
	g.deps.Upstream.Flood = func(server string, f upstream.Flood) {
		g.deps.Events.Publish(events.Event{Type: "notifications", Server: server, Data: f})
	}
	deps.Approvals.OnChange(func(c approval.Change) {
		g.deps.Events.Publish(events.Event{Type: "tools", Server: c.Server, Data: c})
		g.approvalChanged(c.Server)
		if conn, ok := g.Conn(c.Server); ok && c.QuarantineChanged && !c.Quarantined {
			conn.Expose() // now it gets the clients' log level and subscriptions
		}
	})
	deps.Writes.OnChange(func(server string, latched bool) {
		g.deps.Events.Publish(events.Event{Type: "writes", Server: server, Data: map[string]bool{"latched": latched}})
	})
	return g
}

// Metrics are the metrics the gateway records to, for the surfaces'.
func (g *Gateway) Metrics() *metrics.Metrics { return g.deps.Metrics }

// AddView registers a surface to be told about changes.
func (g *Gateway) AddView(v View) {
	g.mu.Lock()
	g.views = append(g.views, v)
	g.mu.Unlock()
}

func (g *Gateway) notifyViews(f func(View)) {
	g.mu.RLock()
	views := slices.Clone(g.views)
	g.mu.RUnlock()
	for _, v := range views {
		f(v)
	}
}

// Reconcile makes the live connections match servers: new ones start,
// removed or disabled ones are removed (their HTTP sessions deleted), changed
// ones restart, unchanged ones are not touched. It returns when the stopped
// connections are gone; new ones connect in the background, in parallel.
func (g *Gateway) Reconcile(servers map[string]*config.Server) {
	// Admission state first (outside g.mu: it notifies views, which read
	// the gateway), so a new server's first inventory meets it.
	disabled, trusted := map[string]bool{}, map[string]bool{}
	for name, cfg := range servers {
		if cfg.Disabled {
			disabled[name] = true
		} else {
			trusted[name] = cfg.Trusted
		}
	}
	if err := g.deps.Approvals.EnsureServers(trusted); err != nil {
		g.log.Error("recording the configured servers failed", "err", err)
	}
	g.mu.Lock()
	// Until the connections below have changed, a server being disabled
	// or enabled counts as disabled: a call to it is never told it is not
	// configured.
	maps.Copy(g.disabled, disabled)
	var remove, stop []*upstream.Conn
	var started []string
	replaced := map[string]*upstream.Conn{}
	for name, c := range g.conns {
		cfg, ok := servers[name]
		switch {
		case !ok || cfg.Disabled:
			remove = append(remove, c)
			delete(g.conns, name)
		case cfg.Equal(c.Config()):
		case cfg.SameConnection(c.Config()):
			c.SetConfig(cfg) // policy only: no reconnect
			started = append(started, name)
		default:
			if cfg.Fingerprint() != c.Config().Fingerprint() {
				remove = append(remove, c) // a different upstream: end its session
			} else {
				stop = append(stop, c)
			}
			replaced[name] = c
			delete(g.conns, name)
		}
	}
	g.mu.Unlock()

	// Old connections end before new ones start: a restarted stdio server
	// never runs twice, and the old one's last state cannot land after the
	// new one's first.
	var wg sync.WaitGroup
	for _, c := range remove {
		wg.Go(c.Remove)
	}
	for _, c := range stop {
		wg.Go(c.Stop)
	}
	wg.Wait()

	g.mu.Lock()
	g.disabled = disabled
	for name, cfg := range servers {
		if _, ok := g.conns[name]; ok || cfg.Disabled {
			continue
		}
		c := upstream.Start(cfg, g.deps.Upstream)
		if old := replaced[name]; old != nil {
			c.Adopt(old) // clients' resource subscriptions carry on
		}
		g.conns[name] = c
		started = append(started, name)
	}
	g.mu.Unlock()
	for _, name := range started {
		if c, ok := g.Conn(name); ok && c.Config().OnDemand && g.Listed(name).Seq == 0 {
			g.startOnDemand(c) // not listed by its upstream yet
		}
	}
	for _, c := range append(remove, stop...) {
		if _, live := g.Conn(c.Name); !live {
			g.deps.Metrics.Forget(c.Name) // gone from the config: no stale series
			g.forgetInventory(c.Name)
			g.removed(c.Name)
		}
	}
	for _, name := range started {
		g.changed(name)
	}
}

// Close stops every connection, keeping HTTP sessions for the next start.
// Calls in flight get a moment to finish; the rest are cancelled, so a write
// among them is recorded as an unknown outcome before the store closes.
func (g *Gateway) Close() {
	g.callMu.Lock()
	g.closed = true
	g.callMu.Unlock()
	done := make(chan struct{})
	go func() { g.calls.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		g.stop()
		<-done
	}
	g.stop()
	g.mu.Lock()
	conns := g.conns
	g.conns = map[string]*upstream.Conn{}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(c.Stop)
	}
	wg.Wait()
}

// Conn returns the live connection of server.
func (g *Gateway) Conn(server string) (*upstream.Conn, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	c, ok := g.conns[server]
	return c, ok
}

// Disabled reports whether server is in the config with "disabled": true.
func (g *Gateway) Disabled(server string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.disabled[server]
}

// live is server's connection, or the refusal saying why there is none.
func (g *Gateway) live(server string) (*upstream.Conn, error) {
	g.mu.RLock()
	c, ok := g.conns[server]
	disabled := g.disabled[server]
	g.mu.RUnlock()
	switch {
	case ok:
		return c, nil
	case disabled:
		return nil, refuse(CodeUnavailable, "Server %q is disabled in the config, so nothing was sent. To use it, %s.", server, DisabledHelp)
	}
	return nil, refuse(CodeUnavailable, "Server %q is not configured. See the configured servers with: warden servers list", server)
}

// DisabledHelp is what to do about a disabled server.
const DisabledHelp = `remove "disabled": true from its entry in the config file (Warden picks the change up by itself)`

// Servers lists the live servers by name.
func (g *Gateway) Servers() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	names := make([]string, 0, len(g.conns))
	for n := range g.conns {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// startOnDemand lists an on-demand server from its pinned approved
// definitions, without running it; one with none runs once, to be listed and
// reviewed, and stops when idle.
func (g *Gateway) startOnDemand(c *upstream.Conn) {
	var tools []*mcp.Tool
	for _, rec := range g.deps.Approvals.Tools(c.Name) {
		if rec.Status != approval.StatusApproved || !rec.Present || len(rec.Approved) == 0 {
			continue
		}
		var t mcp.Tool
		if err := json.Unmarshal(rec.Approved, &t); err != nil {
			g.log.Warn("pinned definition unreadable; the server starts to list it", "server", c.Name, "tool", rec.Name, "err", err)
			c.Wake()
			return
		}
		tools = append(tools, &t)
	}
	if len(tools) == 0 {
		c.Wake()
		return
	}
	g.seed(c.Name, &upstream.Inventory{Tools: tools}) // Seq 0: any listing replaces it
}

// StateChanged publishes connection state (upstream.Peer).
func (g *Gateway) StateChanged(server string, st upstream.Status) {
	g.deps.Metrics.SetState(server, string(st.State))
	g.deps.Events.Publish(events.Event{Type: "server", Server: server, Data: st})
}
