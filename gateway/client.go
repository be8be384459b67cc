package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client is the downstream client behind a call: what the upstream asks or
// tells it during the call (sampling, elicitation, roots, progress, log
// messages) goes back through it, on that call's own response stream.
// Surfaces implement it; operator calls (CLI, REST) have none.
type Client interface {
	Capabilities() *mcp.ClientCapabilities
	// Ask puts one of the upstream's questions to the client. key is the
	// upstream's name for it in an input-required result, "" for a 2025
	// request. The answer is of the type question.NewAnswer(q) gives. Only
	// questions the client declared it can answer are put (Gateway.Ask
	// refuses the others).
	Ask(ctx context.Context, key string, q mcp.InputRequest) (mcp.InputResponse, error)
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

func (s SessionClient) Ask(ctx context.Context, _ string, q mcp.InputRequest) (mcp.InputResponse, error) {
	switch p := q.(type) {
	case *mcp.CreateMessageWithToolsParams:
		return s.CreateMessageWithTools(ctx, p)
	case *mcp.ElicitParams:
		return s.Elicit(ctx, p)
	case *mcp.ListRootsParams:
		return s.ListRoots(ctx, p)
	}
	return nil, fmt.Errorf("unknown question %T", q)
}

func (s SessionClient) Progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	_ = s.NotifyProgress(ctx, p)
}

func (s SessionClient) Log(ctx context.Context, p *mcp.LoggingMessageParams) {
	_ = s.ServerSession.Log(ctx, p)
}
