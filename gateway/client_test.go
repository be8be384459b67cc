package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// SessionClient passes what the gateway routes to a client on to the SDK
// session of that client: the client's handlers answer and hear it.
func TestSessionClient(t *testing.T) {
	ctx := testCtx(t)
	progress := make(chan *mcp.ProgressNotificationParams, 1)
	logs := make(chan *mcp.LoggingMessageParams, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "downstream", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"asked": r.Params.Message}}, nil
		},
		CreateMessageWithToolsHandler: func(context.Context, *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return &mcp.CreateMessageWithToolsResult{Model: "downstream-model", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
	})
	c.AddRoots(&mcp.Root{URI: "file:///downstream"})
	srv := mcp.NewServer(&mcp.Implementation{Name: "warden", Version: "test"}, nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	var sc gateway.Client = gateway.SessionClient{ServerSession: ss}

	parts.WaitFor(t, 20*time.Second, "the client's capabilities", func() bool { return sc.Capabilities() != nil })
	if caps := sc.Capabilities(); caps.Elicitation == nil || caps.Sampling == nil {
		t.Errorf("capabilities %+v; want elicitation and sampling", caps)
	}
	if a, err := sc.Ask(ctx, "", &mcp.ElicitParams{Message: "sure?", RequestedSchema: map[string]any{"type": "object"}}); err != nil || a.(*mcp.ElicitResult).Content["asked"] != "sure?" {
		t.Errorf("elicit: %+v (%v)", a, err)
	}
	if a, err := sc.Ask(ctx, "", &mcp.CreateMessageWithToolsParams{MaxTokens: 1}); err != nil || a.(*mcp.CreateMessageWithToolsResult).Model != "downstream-model" {
		t.Errorf("sampling: %+v (%v)", a, err)
	}
	if a, err := sc.Ask(ctx, "", &mcp.ListRootsParams{}); err != nil || len(a.(*mcp.ListRootsResult).Roots) != 1 || a.(*mcp.ListRootsResult).Roots[0].URI != "file:///downstream" {
		t.Errorf("roots: %+v (%v)", a, err)
	}
	sc.Progress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "tok", Progress: 3})
	sc.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: "bad"})
	for got := range 2 {
		select {
		case p := <-progress:
			if p.ProgressToken != "tok" || p.Progress != 3 {
				t.Errorf("progress %+v", p)
			}
		case l := <-logs:
			if l.Data != "bad" {
				t.Errorf("log %+v", l)
			}
		case <-ctx.Done():
			t.Fatalf("%d of 2 notifications reached the client", got)
		}
	}

	// A session not initialized has no capabilities to tell.
	if caps := (gateway.SessionClient{ServerSession: &mcp.ServerSession{}}).Capabilities(); caps != nil {
		t.Errorf("an uninitialized session's capabilities: %+v", caps)
	}
}
