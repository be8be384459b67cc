package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Do runs a non-tool request (prompts, resources, completion, subscriptions)
// on server's live session. Quarantined servers answer nothing.
func (g *Gateway) Do(ctx context.Context, server string, fn func(context.Context, *mcp.ClientSession) error) error {
	c, ok := g.Conn(server)
	if !ok {
		return refuse(CodeUnavailable, "Server %q is not configured or is disabled. See the configured servers with: warden servers list", server)
	}
	if g.deps.Approvals.Quarantined(server) {
		return refuse(CodeQuarantined, "Server %q is quarantined. Review with: warden review %s; approve with: warden servers approve %s", server, server, server)
	}
	return c.Do(ctx, fn)
}

// SetLogLevel asks every live upstream for log messages at level and above;
// each downstream session still filters by its own level.
func (g *Gateway) SetLogLevel(ctx context.Context, servers []string, level mcp.LoggingLevel) {
	for _, s := range servers {
		if c, ok := g.Conn(s); ok {
			_ = c.SetLogLevel(ctx, level)
		}
	}
}
