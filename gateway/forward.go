package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/upstream"
)

// GetPrompt, ReadResource and Complete forward a client's request to
// server; what the server asks meanwhile goes to client (nil: an
// operator's request, which nothing is asked of). Quarantined servers
// answer nothing.

// GetPrompt forwards a prompts/get.
func (g *Gateway) GetPrompt(ctx context.Context, server string, client Client, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return forward(ctx, g, server, client, p, (*upstream.Conn).GetPrompt)
}

// ReadResource forwards a resources/read.
func (g *Gateway) ReadResource(ctx context.Context, server string, client Client, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return forward(ctx, g, server, client, p, (*upstream.Conn).ReadResource)
}

// Complete forwards a completion/complete.
func (g *Gateway) Complete(ctx context.Context, server string, client Client, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return forward(ctx, g, server, client, p, (*upstream.Conn).Complete)
}

func forward[P, R any](ctx context.Context, g *Gateway, server string, client Client, p P, send func(*upstream.Conn, context.Context, *upstream.Call, P) (R, error)) (res R, err error) {
	c, err := g.forwardable(server)
	if err != nil {
		return res, err
	}
	f := &inflight{server: server, client: client, ctx: ctx}
	_, done := g.router.add(f)
	defer done()
	return send(c, ctx, &f.up, p)
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
		if c, ok := g.conn(s); ok {
			c.Unfollow(who)
		}
	}
}

// SetLogLevel asks every live upstream for log messages at level and above
// (a quarantined one only once it is approved); each downstream session
// still filters by its own level.
func (g *Gateway) SetLogLevel(ctx context.Context, servers []string, level mcp.LoggingLevel) {
	for _, s := range servers {
		if c, ok := g.conn(s); ok {
			_ = c.SetLogLevel(ctx, level)
		}
	}
}
