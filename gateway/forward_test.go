package gateway_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// view records what the gateway tells a surface.
type view struct {
	mu      sync.Mutex
	changed []string
	logs    []string // server: data
	updates []string // server: URI
}

func (v *view) Changed(server string) {
	v.mu.Lock()
	v.changed = append(v.changed, server)
	v.mu.Unlock()
}

func (v *view) Log(server string, p *mcp.LoggingMessageParams) {
	v.mu.Lock()
	v.logs = append(v.logs, fmt.Sprintf("%s: %v", server, p.Data))
	v.mu.Unlock()
}

func (v *view) ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	v.mu.Lock()
	v.updates = append(v.updates, server+": "+p.URI)
	v.mu.Unlock()
}

func (v *view) seen(what func(*view) []string, want string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Contains(what(v), want)
}

func changedOf(v *view) []string { return v.changed }
func logsOf(v *view) []string    { return v.logs }
func updatesOf(v *view) []string { return v.updates }

// richPair is a trusted rich server r and a quarantined one q, listed.
func richPair(t *testing.T) (*parts.Parts, *fixture.Rich, *fixture.Rich) {
	t.Helper()
	r, q := fixture.NewRich(t), fixture.NewRich(t)
	p := start(t, fmt.Sprintf(`{"r": {"url": %q, "trusted": true}, "q": {"url": %q}}`, r.URL, q.URL))
	p.WaitListed(t, "r")
	p.WaitListed(t, "q")
	parts.WaitFor(t, 20*time.Second, "r's prompts", func() bool { return len(p.Gateway.Prompts("r")) > 0 })
	return p, r, q
}

// An exposed server's prompts, resources, templates and instructions are
// served, and requests for them are forwarded to it; a quarantined
// server's are neither listed nor reachable.
func TestForwardingAndQuarantine(t *testing.T) {
	p, _, _ := richPair(t)
	g := p.Gateway
	ctx := testCtx(t)

	if ps := g.Prompts("r"); len(ps) != 1 || ps[0].Name != fixture.RichPrompt {
		t.Errorf("prompts of r: %+v", ps)
	}
	if rs := g.Resources("r"); len(rs) != 1 || rs[0].URI != fixture.RichResource {
		t.Errorf("resources of r: %+v", rs)
	}
	if ts := g.Templates("r"); len(ts) != 1 || ts[0].URITemplate != fixture.RichTemplate {
		t.Errorf("templates of r: %+v", ts)
	}
	if got := g.Instructions("r"); got != fixture.RichInstructions {
		t.Errorf("instructions of r: %q", got)
	}
	var got string
	res, err := g.GetPrompt(ctx, "r", nil, &mcp.GetPromptParams{Name: fixture.RichPrompt, Arguments: map[string]string{"who": "Ada"}})
	if err == nil {
		got = res.Messages[0].Content.(*mcp.TextContent).Text
	}
	if err != nil || got != "hello Ada" {
		t.Errorf("a prompt forwarded to r: %q (%v)", got, err)
	}

	// q is quarantined: it shows nothing and takes no request.
	if g.Prompts("q") != nil || g.Resources("q") != nil || g.Templates("q") != nil || g.Instructions("q") != "" || g.ToolTokens("q") != 0 {
		t.Errorf("quarantined q shows prompts %v, resources %v, templates %v, instructions %q, %d tool tokens",
			g.Prompts("q"), g.Resources("q"), g.Templates("q"), g.Instructions("q"), g.ToolTokens("q"))
	}
	for _, tt := range []struct {
		name string
		do   func() error
	}{
		{"GetPrompt", func() error {
			_, err := g.GetPrompt(ctx, "q", nil, &mcp.GetPromptParams{Name: fixture.RichPrompt})
			return err
		}},
		{"ReadResource", func() error {
			_, err := g.ReadResource(ctx, "q", nil, &mcp.ReadResourceParams{URI: fixture.RichResource})
			return err
		}},
		{"Complete", func() error {
			_, err := g.Complete(ctx, "q", nil, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: fixture.RichPrompt}})
			return err
		}},
		{"Subscribe", func() error { return g.Subscribe(ctx, "q", fixture.RichResource, "who") }},
		{"Unsubscribe", func() error { return g.Unsubscribe(ctx, "q", fixture.RichResource, "who") }},
	} {
		var ref *gateway.Refusal
		if err := tt.do(); !errors.As(err, &ref) || ref.Code != gateway.CodeQuarantined {
			t.Errorf("%s on quarantined q: %v, want a %s refusal", tt.name, err, gateway.CodeQuarantined)
		}
	}
	var ref *gateway.Refusal
	if _, err := g.GetPrompt(ctx, "nosuch", nil, &mcp.GetPromptParams{Name: "p"}); !errors.As(err, &ref) || ref.Code != gateway.CodeUnavailable {
		t.Errorf("GetPrompt on a server not configured: %v", err)
	}
	if g.Prompts("nosuch") != nil || g.Tools("nosuch") != nil || g.Instructions("nosuch") != "" {
		t.Errorf("a server not configured shows prompts %v, tools %v", g.Prompts("nosuch"), g.Tools("nosuch"))
	}

	// Approved, q shows them.
	v := &view{}
	g.AddView(v)
	if _, err := p.Approvals.ApproveServer("q", approval.ServerApproval{}); err != nil {
		t.Fatal(err)
	}
	if !v.seen(changedOf, "q") {
		t.Error("approving q did not tell the views q changed")
	}
	if ps := g.Prompts("q"); len(ps) != 1 || g.Instructions("q") != fixture.RichInstructions {
		t.Errorf("approved q shows prompts %v, instructions %q", ps, g.Instructions("q"))
	}
}

// A resource followed by two sessions is subscribed upstream once and
// unsubscribed after the last leaves; its updates reach the views meanwhile.
func TestSubscriptions(t *testing.T) {
	p, r, _ := richPair(t)
	g := p.Gateway
	v := &view{}
	g.AddView(v)
	ctx := testCtx(t)
	next := func() string {
		t.Helper()
		select {
		case s := <-r.Subs:
			return s
		case <-ctx.Done():
			t.Fatal("the upstream heard nothing")
			return ""
		}
	}

	if err := g.Subscribe(ctx, "r", fixture.RichResource, "a"); err != nil {
		t.Fatal(err)
	}
	if err := g.Subscribe(ctx, "r", fixture.RichResource, "b"); err != nil {
		t.Fatal(err)
	}
	if s := next(); s != fixture.RichResource {
		t.Fatalf("upstream heard %q, want a subscription to %s", s, fixture.RichResource)
	}
	if err := r.Server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: fixture.RichResource}); err != nil {
		t.Fatal(err)
	}
	parts.WaitFor(t, 20*time.Second, "the update to reach the view", func() bool { return v.seen(updatesOf, "r: "+fixture.RichResource) })

	if err := g.Unsubscribe(ctx, "r", fixture.RichResource, "a"); err != nil {
		t.Fatal(err)
	}
	g.Unfollow("b") // b's session ended: the last follower
	if s := next(); s != "-"+fixture.RichResource {
		t.Fatalf("upstream heard %q, want the one unsubscription after the last follower left", s)
	}
	select {
	case s := <-r.Subs:
		t.Fatalf("upstream heard %q more", s)
	default:
	}
}

// A log message that comes with no call goes to the views.
func TestLogWithoutCallGoesToViews(t *testing.T) {
	p, r, _ := richPair(t)
	g := p.Gateway
	v := &view{}
	g.AddView(v)
	ctx := testCtx(t)
	g.SetLogLevel(ctx, []string{"r"}, "debug")
	for ss := range r.Server.Sessions() {
		if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "from r"}); err != nil {
			t.Fatal(err)
		}
	}
	parts.WaitFor(t, 20*time.Second, "r's log message at the view", func() bool { return v.seen(logsOf, "r: from r") })
}

// ToolTokens counts only the tools a client is shown.
func TestToolTokensCountVisibleTools(t *testing.T) {
	p, _, _ := richPair(t)
	g := p.Gateway
	before := g.ToolTokens("r")
	if before == 0 {
		t.Fatal("r's visible tool costs no tokens")
	}
	if _, err := p.Approvals.Block("r", []string{fixture.RichTool, fixture.RichMetaTool}, "test"); err != nil {
		t.Fatal(err)
	}
	if after := g.ToolTokens("r"); after != 0 {
		t.Errorf("with its tools blocked, r costs %d tokens", after)
	}
}
