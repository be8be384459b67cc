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
	c, ok := g.Conn(server)
	if !ok {
		return Connection{State: string(upstream.StateStopped)}
	}
	st := c.Status()
	return Connection{State: string(st.State), Error: st.Error, Since: st.Since,
		Reconnects: st.Reconnects, Failures: st.Failures, RetryAt: st.RetryAt, Stderr: st.Stderr}
}

// LiveConfig is the config server's connection runs with, if it has one
// (it is in the config and not disabled).
func (g *Gateway) LiveConfig(server string) (*config.Server, bool) {
	c, ok := g.Conn(server)
	if !ok {
		return nil, false
	}
	return c.Config(), true
}
