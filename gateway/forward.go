package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/upstream"
)

// Do runs a non-tool request (prompts, resources, completion) of client's
// on server's live session; what the server asks meanwhile goes to client
// (nil: an operator's request, which nothing is asked of). Quarantined
// servers answer nothing.
func (g *Gateway) Do(ctx context.Context, server string, client Client, fn func(context.Context, *mcp.ClientSession) error) error {
	c, err := g.forwardable(server)
	if err != nil {
		return err
	}
	f := &inflight{server: server, client: client, ctx: ctx}
	_, done := g.router.add(f)
	defer done()
	var caller *mcp.ClientCapabilities
	if client != nil {
		caller = client.Capabilities()
	}
	return c.DoFor(withInflight(ctx, f), caller, fn)
}

// forwardable is server's connection, if non-tool requests may go to it.
func (g *Gateway) forwardable(server string) (*upstream.Conn, error) {
	c, err := g.conns.live(server)
	if err != nil {
		return nil, err
	}
	if g.deps.Approvals.Quarantined(server) {
		return nil, refuse(CodeQuarantined, "Server %q is quarantined. Review with: warden review %s; approve with: warden servers approve %s", server, server, server)
	}
	return c, nil
}

// Subscribe makes who (a downstream session) follow an upstream resource;
// the upstream subscription is shared by its followers.
func (g *Gateway) Subscribe(ctx context.Context, server, uri string, who any) error {
	c, err := g.forwardable(server)
	if err != nil {
		return err
	}
	return c.Subscribe(ctx, uri, who)
}

// Unsubscribe ends who's following of an upstream resource.
func (g *Gateway) Unsubscribe(ctx context.Context, server, uri string, who any) error {
	c, err := g.forwardable(server)
	if err != nil {
		return err
	}
	return c.Unsubscribe(ctx, uri, who)
}

// Unfollow ends every subscription of who, whose session ended.
func (g *Gateway) Unfollow(who any) {
	for _, s := range g.Servers() {
		if c, ok := g.Conn(s); ok {
			c.Unfollow(who)
		}
	}
}

// SetLogLevel asks every live upstream for log messages at level and above
// (a quarantined one only once it is approved); each downstream session
// still filters by its own level.
func (g *Gateway) SetLogLevel(ctx context.Context, servers []string, level mcp.LoggingLevel) {
	for _, s := range servers {
		if c, ok := g.Conn(s); ok {
			_ = c.SetLogLevel(ctx, level)
		}
	}
}
