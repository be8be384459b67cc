package gateway

import (
	"time"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/upstream"
)

// Connection is the state of a server's connection, as the operator API
// shows it.
type Connection struct {
	// State is one of connecting, ready, backoff, needs_login, idle,
	// stopped.
	State      string    `json:"state"`
	Error      string    `json:"error,omitempty"`
	Since      time.Time `json:"since"`
	Reconnects int       `json:"reconnects"`        // sessions lost and replaced
	Failures   int       `json:"failures"`          // connection attempts failed in a row
	RetryAt    time.Time `json:"retry_at,omitzero"` // in backoff: when the next attempt starts
	// Stderr is, after a failed start of a stdio server, the last lines it
	// wrote to its stderr (secrets masked; its whole log: warden logs NAME).
	Stderr []string `json:"stderr,omitempty"`
}

// Connection is server's connection state: "stopped" for a server with no
// connection (disabled, or not in the config).
func (g *Gateway) Connection(server string) Connection {
	u, ok := g.Upstream(server)
	if !ok {
		return Connection{State: string(upstream.StateStopped)}
	}
	return u.Connection()
}

// Upstream is a server's live connection as those above the gateway may
// hold it (the daemon, tests): its state and a listing pass on demand,
// never its session. Two are equal when they are the same connection (a
// reload that reconnects makes a new one).
type Upstream struct{ c *upstream.Conn }

// Upstream is server's live connection, if it has one (it is in the config
// and not disabled).
func (g *Gateway) Upstream(server string) (Upstream, bool) {
	c, ok := g.conn(server)
	return Upstream{c}, ok
}

// Connection is the connection's state.
func (u Upstream) Connection() Connection {
	st := u.c.Status()
	return Connection{State: string(st.State), Error: st.Error, Since: st.Since,
		Reconnects: st.Reconnects, Failures: st.Failures, RetryAt: st.RetryAt, Stderr: st.Stderr}
}

// Refresh takes a listing pass now, if the server is connected.
func (u Upstream) Refresh() { u.c.Refresh() }

// LiveConfig is the config server's connection runs with, if it has one
// (it is in the config and not disabled).
func (g *Gateway) LiveConfig(server string) (*config.Server, bool) {
	c, ok := g.conn(server)
	if !ok {
		return nil, false
	}
	return c.Config(), true
}

// MetaExecution is the _meta key a listed tool's execution (the tasks
// extension's execution.taskSupport) is kept under, pinned with it; the
// surfaces list it as the tool's execution again.
const MetaExecution = upstream.MetaExecution

// How a tool runs for a client that declares the tasks extension (its
// execution.taskSupport).
const (
	TaskForbidden = "forbidden" // a direct call
	TaskOptional  = "optional"  // a task
	TaskRequired  = "required"  // a task, and refused to other clients
)

// TaskSupport says how server's tool runs for a client that declares the
// tasks extension: as its listed definition's execution.taskSupport says
// (pinned with it, see MetaExecution), else TaskOptional when its
// server's config names it ("tasks"), else TaskForbidden.
func (g *Gateway) TaskSupport(server, tool string) string {
	var support string
	if inv := g.inv.get(server); inv != nil {
		if def := inv.Tool(tool); def != nil {
			if ex, ok := def.Meta[MetaExecution].(map[string]any); ok {
				support, _ = ex["taskSupport"].(string)
			}
		}
	}
	switch {
	case support == TaskOptional || support == TaskRequired:
		return support
	case g.configNamesTask(server, tool):
		return TaskOptional
	}
	return TaskForbidden
}

func (g *Gateway) configNamesTask(server, tool string) bool {
	cfg, ok := g.LiveConfig(server)
	return ok && cfg.Tasks.Has(tool)
}
