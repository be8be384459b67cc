package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client is the downstream client behind a call: what the upstream asks or
// tells it during the call (sampling, elicitation, roots, progress, log
// messages) goes back through it, on that call's own response stream.
// Surfaces implement it; operator calls (CLI, REST) have none.
type Client interface {
	Capabilities() *mcp.ClientCapabilities
	CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	ListRoots(ctx context.Context) (*mcp.ListRootsResult, error)
	Progress(ctx context.Context, p *mcp.ProgressNotificationParams)
	Log(ctx context.Context, p *mcp.LoggingMessageParams)
}

// SessionClient adapts an SDK server session: messages sent with the
// request's context go on that request's stream.
type SessionClient struct{ *mcp.ServerSession }

func (s SessionClient) Capabilities() *mcp.ClientCapabilities {
	if p := s.InitializeParams(); p != nil {
		return p.Capabilities
	}
	return nil
}

func (s SessionClient) CreateMessage(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return s.CreateMessageWithTools(ctx, p)
}

func (s SessionClient) ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	return s.ServerSession.ListRoots(ctx, nil)
}

func (s SessionClient) Progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	_ = s.NotifyProgress(ctx, p)
}

func (s SessionClient) Log(ctx context.Context, p *mcp.LoggingMessageParams) {
	_ = s.ServerSession.Log(ctx, p)
}
