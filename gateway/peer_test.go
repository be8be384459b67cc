package gateway_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
)

// What an upstream sends during a call (progress under the client's own
// token, log messages, elicitation, roots, sampling) reaches the client
// that made the call, and the call's answer carries the client's answers.
func TestUpstreamTalksToItsCaller(t *testing.T) {
	r := fixture.NewRich(t)
	p := start(t, fmt.Sprintf(`{"r": {"url": %q, "trusted": true}}`, r.URL))
	p.WaitListed(t, "r")
	ctx := testCtx(t)
	p.Gateway.SetLogLevel(ctx, []string{"r", "nosuch"}, "info")

	c := &client{caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, Sampling: &mcp.SamplingCapabilities{}, RootsV2: &mcp.RootCapabilities{}},
		elicit: func(*mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "Ada"}}, nil
		}}
	res, err := p.Gateway.CallTool(ctx, gateway.Call{Server: "r", Tool: fixture.RichTool, Surface: "mcp", Client: c,
		Meta: mcp.Meta{"progressToken": "client-token-1"}})
	if err != nil {
		t.Fatal(err)
	}
	out := decoded(t, res)
	if out.IsError || text(out) != "Ada|file:///root-of-test|test-model" {
		t.Fatalf("ask answered %+v %q; want the client's answers", out, text(out))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.asked) != 1 || c.asked[0].Message != "who are you?" {
		t.Errorf("the client was asked %+v", c.asked)
	}
	if len(c.progress) != 1 || c.progress[0].ProgressToken != "client-token-1" || c.progress[0].Message != "half way" {
		t.Errorf("progress reached the client as %+v; want one, under the client's own token", c.progress)
	}
	if len(c.logs) != 1 || c.logs[0].Data != "asking" || c.logs[0].Level != "warning" {
		t.Errorf("log messages reached the client as %+v", c.logs)
	}
}

// A client is put only the questions it declared it can answer, in any
// era: the others are refused for it, with MissingRequiredClientCapability,
// and it never sees them (roots are asked of any client).
func TestUpstreamAsksOnlyWhatItsCallerCanAnswer(t *testing.T) {
	r := fixture.NewRich(t)
	p := start(t, fmt.Sprintf(`{"r": {"url": %q, "trusted": true}}`, r.URL))
	p.WaitListed(t, "r")
	c := &client{caps: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}, // no sampling
		elicit: func(*mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "Ada"}}, nil
		}}
	res, err := p.Gateway.CallTool(testCtx(t), gateway.Call{Server: "r", Tool: fixture.RichTool, Surface: "mcp", Client: c})
	if err == nil {
		err = errors.New(text(decoded(t, res)))
	}
	if !strings.Contains(err.Error(), "did not declare the capability sampling/createMessage needs") {
		t.Fatalf("the call ended with %v; want the upstream's failure to sample, refused for want of the capability", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if fmt.Sprint(c.methods) != "[elicitation/create roots/list]" {
		t.Errorf("the client was put %v; want no sampling", c.methods)
	}
}

// An operator call (no client) of a tool that asks its client gets the
// upstream's error about it, not another session's answer.
func TestUpstreamRequestDuringOperatorCall(t *testing.T) {
	r := fixture.NewRich(t)
	p := start(t, fmt.Sprintf(`{"r": {"url": %q, "trusted": true}}`, r.URL))
	p.WaitListed(t, "r")
	res, err := call(t, p, "r", fixture.RichTool, "", nil)
	if err == nil || !strings.Contains(err.Error(), "no client session is waiting on this server") {
		t.Fatalf("ask without a client answered %v (%v); want the upstream's error that no client waits", res, err)
	}
}
