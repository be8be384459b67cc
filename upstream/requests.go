package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client's requests other than tools/call, each on the live session as
// Do runs it, with call in its context: what the upstream asks meanwhile
// goes to call's Origin, and a stateless-era upstream is told what that
// client can answer (see forCaller).

// GetPrompt runs a prompts/get of call's client.
func (c *Conn) GetPrompt(ctx context.Context, call *Call, p *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return request(ctx, c, call, p, (*mcp.ClientSession).GetPrompt)
}

// ReadResource runs a resources/read of call's client.
func (c *Conn) ReadResource(ctx context.Context, call *Call, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return request(ctx, c, call, p, (*mcp.ClientSession).ReadResource)
}

// Complete runs a completion/complete of call's client.
func (c *Conn) Complete(ctx context.Context, call *Call, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return request(ctx, c, call, p, (*mcp.ClientSession).Complete)
}

func request[P, R any](ctx context.Context, c *Conn, call *Call, p P, send func(*mcp.ClientSession, context.Context, P) (R, error)) (res R, err error) {
	err = c.Do(WithCall(ctx, call), func(ctx context.Context, cs *mcp.ClientSession) (err error) {
		res, err = send(cs, ctx, p)
		return err
	})
	return res, err
}
