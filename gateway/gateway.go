// Package gateway is the one place every call passes through between the
// downstream surfaces (/mcp, /mcp/{server}, warden stdio, the CLI) and the
// upstream connections. Policy sits here: quarantine and tool approval, the
// unknown-outcome write latch, destructive-call confirmation, the activity
// log and metrics. It also owns the set of live upstream connections and
// routes each upstream's server-to-client traffic back to the right client.
package gateway

import (
	"encoding/json"
	"log/slog"
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

// Gateway puts its parts together behind the surfaces' one entry: the call
// path and its policy (call.go), with the calls in flight (callGate); the
// live connections (registry); each server's inventory and what clients see
// of it (inventories, visible.go); the server-to-client traffic's routes
// (router, route.go); and the views it tells of changes.
type Gateway struct {
	deps   Deps
	log    *slog.Logger
	router *router

	conns *registry // the live connections (registry.go)
	views views
	inv   *inventories // what each server offers clients (inventory.go)
	gate  *callGate    // the calls in flight (gate.go)

	relisting sync.Map // servers being listed again (relist)
}

// relist lists server c again off the caller's path, once at a time.
func (g *Gateway) relist(server string, c *upstream.Conn) {
	if _, busy := g.relisting.LoadOrStore(server, true); busy {
		return
	}
	go func() {
		defer g.relisting.Delete(server)
		c.Refresh()
	}()
}

// New returns a gateway with no servers; Reconcile starts them.
func New(deps Deps) *Gateway {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	g := &Gateway{deps: deps, log: deps.Logger, router: newRouter(), gate: newCallGate()}
	g.inv = newInventories(func(server string) { g.views.each(func(v View) { v.Changed(server) }) })
	g.deps.Upstream.Peer = peer{g}
	g.deps.Upstream.Logger = deps.Logger
	g.deps.Upstream.NoticeDropped = func(server string) { deps.Metrics.NoticeDropped(server, "flood") }
	if g.deps.Upstream.Answers == nil {
		g.deps.Upstream.Answers = upstream.NewAnswers(upstream.DefaultAnswersTotal, upstream.DefaultAnswerMax, deps.Metrics.AnswerBytes)
	}
	g.deps.Upstream.Flood = func(server string, f upstream.Flood) {
		g.deps.Events.Publish(events.Event{Type: "notifications", Server: server, Data: f})
	}
	g.conns = newRegistry(g.deps.Upstream)
	deps.Approvals.OnChange(func(c approval.Change) {
		g.deps.Events.Publish(events.Event{Type: "tools", Server: c.Server, Data: c})
		g.inv.approvalChanged(c.Server)
		if conn, ok := g.conn(c.Server); ok && c.QuarantineChanged && !c.Quarantined {
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
func (g *Gateway) AddView(v View) { g.views.add(v) }

// Reconcile makes the live connections match servers: new ones start,
// removed or disabled ones are removed (their HTTP sessions deleted), changed
// ones restart, unchanged ones are not touched. It returns when the stopped
// connections are gone; new ones connect in the background, in parallel.
func (g *Gateway) Reconcile(servers map[string]*config.Server) {
	// Admission state first (it notifies views, which read the gateway),
	// so a new server's first inventory meets it.
	trusted := map[string]bool{}
	for name, cfg := range servers {
		if !cfg.Disabled {
			trusted[name] = cfg.Trusted
		}
	}
	if err := g.deps.Approvals.EnsureServers(trusted); err != nil {
		g.log.Error("recording the configured servers failed", "err", err)
	}
	ch := g.conns.reconcile(servers)
	for _, name := range ch.started {
		if c, ok := g.conn(name); ok && c.Config().OnDemand && g.Listed(name).Seq == 0 {
			g.startOnDemand(c) // not listed by its upstream yet
		}
	}
	for _, c := range ch.gone {
		if _, live := g.conn(c.Name); !live {
			g.deps.Metrics.Forget(c.Name) // gone from the config: no stale series
			g.inv.removed(c.Name)
		}
	}
	for _, name := range ch.started {
		g.inv.changed(name)
	}
}

// Close stops every connection, keeping HTTP sessions for the next start.
// Calls in flight get a moment to finish; the rest are cancelled, so a write
// among them is recorded as an unknown outcome before the store closes.
func (g *Gateway) Close() {
	g.gate.shut(2 * time.Second)
	g.conns.stopAll()
}

// conn returns the live connection of server.
func (g *Gateway) conn(server string) (*upstream.Conn, bool) { return g.conns.conn(server) }

// Disabled reports whether server is in the config with "disabled": true.
func (g *Gateway) Disabled(server string) bool { return g.conns.isDisabled(server) }

// DisabledHelp is what to do about a disabled server.
const DisabledHelp = `remove "disabled": true from its entry in the config file (Warden picks the change up by itself)`

// Servers lists the live servers by name.
func (g *Gateway) Servers() []string { return g.conns.names() }

// startOnDemand lists an on-demand server from its pinned approved
// definitions, without running it; one with none runs once, to be listed and
// reviewed, and stops when idle.
func (g *Gateway) startOnDemand(c *upstream.Conn) {
	var tools []*mcp.Tool
	pins := map[string]string{}
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
		pins[t.Name] = rec.ApprovedHash
	}
	if len(tools) == 0 {
		c.Wake()
		return
	}
	g.inv.seed(c.Name, &upstream.Inventory{Tools: tools}, pins) // Seq 0: any listing replaces it
}

// peer is the gateway as upstream's Peer. Its methods are on this
// unexported type, not on Gateway, so that nothing Gateway exports takes or
// gives an upstream type: only upstream calls them.
type peer struct{ *Gateway }

// StateChanged publishes connection state.
func (g peer) StateChanged(server string, st upstream.Status) {
	g.deps.Metrics.SetState(server, string(st.State))
	g.deps.Events.Publish(events.Event{Type: "server", Server: server, Data: st})
}
