package surface_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// standardEnv: fx (trusted, echo hidden), r (a rich server, trusted), q
// (untrusted: quarantined) and off (disabled), listed on /mcp.
func standardEnv(t *testing.T) (*env, *fixture.Fixture, *fixture.Rich, *fixture.Fixture) {
	t.Helper()
	fx, r, q := fixture.NewServer(fixture.Options{}), fixture.NewRich(t), fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{
		"fx": {"url": %q, "trusted": true, "tools": {"echo": {"hidden": true}}},
		"r": {"url": %q, "trusted": true},
		"q": {"url": %q},
		"off": {"url": "http://127.0.0.1:1/mcp", "disabled": true}
	}`, fx.Serve(t), r.URL, q.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	e.WaitListed(t, "r")
	e.WaitListed(t, "q")
	return e, fx, r, q
}

// /mcp lists every exposed server's visible tools and prompts under
// "<server>__<name>" and their resources as they are; calls and other
// requests reach the owning server, under its own names.
func TestAggregatedEndpoint(t *testing.T) {
	e, fx, r, _ := standardEnv(t)
	updated := make(chan string, 4)
	cs := e.connect(t, "/mcp", &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}}, session2025)

	want := []string{"fx__delete_value", "fx__read_value", "fx__write_value", "r__ask", "r__meta"}
	waitTools(t, cs, "fx's and r's tools on /mcp", func(n []string) bool { return slices.Equal(n, want) })

	// Calls, by their aggregated names.
	if out, isErr, _, err := callText(t, cs, "fx__write_value", map[string]any{"key": "k", "value": "v"}); err != nil || isErr || out != "stored" || fx.Value("k") != "v" {
		t.Fatalf("fx__write_value: %q %v (%v)", out, isErr, err)
	}
	if out, _, _, err := callText(t, cs, "fx__read_value", map[string]any{"key": "k"}); err != nil || out != "v" {
		t.Fatalf("fx__read_value: %q (%v)", out, err)
	}
	p := e.Parts
	p.Activity.Flush()
	if es, _ := p.Activity.Query(activity.Filter{Server: "fx"}, 1); len(es) != 1 || es[0].Surface != "mcp" || es[0].Tool != fixture.ToolRead {
		t.Errorf("activity %+v; want the read, from surface mcp", es)
	}

	// Refusals: a quarantined server's tool, a disabled server's, and
	// names that stand for no tool.
	if out, isErr, code, err := callText(t, cs, "q__echo", nil); err != nil || !isErr || code != "SERVER_QUARANTINED" {
		t.Errorf("q__echo: %q %v %q (%v); want a SERVER_QUARANTINED refusal", out, isErr, code, err)
	}
	if out, _, code, err := callText(t, cs, "off__anything", nil); err != nil || code != "UPSTREAM_UNAVAILABLE" || !strings.Contains(out, "disabled") {
		t.Errorf("off__anything: %q %q (%v); want a refusal saying off is disabled", out, code, err)
	}
	for _, name := range []string{"fx__echo", "fx__nosuch", "nosuch__tool", "no_separator", "fx__a__b"} {
		if _, _, _, err := callText(t, cs, name, nil); err == nil || !strings.Contains(err.Error(), "unknown tool") {
			t.Errorf("%s: %v; want an unknown-tool error", name, err)
		}
	}

	// Prompts: listed under the aggregated name, run under the upstream's.
	res, err := cs.ListPrompts(ctx(t), nil)
	if err != nil || len(res.Prompts) != 1 || res.Prompts[0].Name != "r__"+fixture.RichPrompt {
		t.Fatalf("prompts %+v (%v)", res, err)
	}
	pr, err := cs.GetPrompt(ctx(t), &mcp.GetPromptParams{Name: "r__" + fixture.RichPrompt, Arguments: map[string]string{"who": "Ada"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello Ada" {
		t.Fatalf("get prompt: %+v (%v)", pr, err)
	}

	// Resources and templates, as the server names them.
	rs, err := cs.ListResources(ctx(t), nil)
	if err != nil || len(rs.Resources) != 1 || rs.Resources[0].URI != fixture.RichResource {
		t.Fatalf("resources %+v (%v)", rs, err)
	}
	ts, err := cs.ListResourceTemplates(ctx(t), nil)
	if err != nil || len(ts.ResourceTemplates) != 1 || ts.ResourceTemplates[0].URITemplate != fixture.RichTemplate {
		t.Fatalf("templates %+v (%v)", ts, err)
	}
	for uri, want := range map[string]string{fixture.RichResource: "read me", "test://rich/items/7": "item"} {
		rr, err := cs.ReadResource(ctx(t), &mcp.ReadResourceParams{URI: uri})
		if err != nil || rr.Contents[0].Text != want {
			t.Errorf("read %s: %+v (%v)", uri, rr, err)
		}
	}

	// Completion goes to the owner, with the upstream's own names.
	for _, tt := range []struct {
		ref  *mcp.CompleteReference
		want string
	}{
		{&mcp.CompleteReference{Type: "ref/prompt", Name: "r__" + fixture.RichPrompt}, "ref/prompt:" + fixture.RichPrompt + ":A"},
		{&mcp.CompleteReference{Type: "ref/resource", URI: fixture.RichTemplate}, "ref/resource:" + fixture.RichTemplate + ":A"},
	} {
		cr, err := cs.Complete(ctx(t), &mcp.CompleteParams{Ref: tt.ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "A"}})
		if err != nil || !slices.Equal(cr.Completion.Values, []string{tt.want}) {
			t.Errorf("complete %+v: %+v (%v); want %q", tt.ref, cr, err, tt.want)
		}
	}
	if _, err := cs.Complete(ctx(t), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "nosuch"}, Argument: mcp.CompleteParamsArgument{Name: "a"}}); err == nil || !strings.Contains(err.Error(), "unknown completion reference") {
		t.Errorf("completing an unknown prompt: %v", err)
	}

	// Subscriptions go to the owner; its updates come back.
	if err := cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: fixture.RichResource}); err != nil {
		t.Fatal(err)
	}
	if got := <-r.Subs; got != fixture.RichResource {
		t.Fatalf("the upstream heard %q", got)
	}
	if err := r.Server.ResourceUpdated(ctx(t), &mcp.ResourceUpdatedNotificationParams{URI: fixture.RichResource}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != fixture.RichResource {
			t.Errorf("update for %q", uri)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the resource update did not reach the subscribed client")
	}
	if err := cs.Unsubscribe(ctx(t), &mcp.UnsubscribeParams{URI: fixture.RichResource}); err != nil {
		t.Fatal(err)
	}
	if got := <-r.Subs; got != "-"+fixture.RichResource {
		t.Fatalf("the upstream heard %q, want the unsubscription", got)
	}
	if err := cs.Subscribe(ctx(t), &mcp.SubscribeParams{URI: "test://nobody/x"}); err == nil || !strings.Contains(err.Error(), "unknown resource") {
		t.Errorf("subscribing to a URI no server offers: %v", err)
	}
}

// /mcp/{server} shows one server under its own names; a server that is
// not configured, or disabled, has no endpoint.
func TestServerEndpoint(t *testing.T) {
	e, _, _, _ := standardEnv(t)
	cs := e.connect(t, "/mcp/fx", nil, session2025)
	waitTools(t, cs, "fx's own tools", func(n []string) bool {
		return slices.Equal(n, []string{fixture.ToolDelete, fixture.ToolRead, fixture.ToolWrite})
	})
	if out, isErr, _, err := callText(t, cs, fixture.ToolEcho, nil); err == nil {
		t.Errorf("the hidden echo on /mcp/fx: %q %v", out, isErr)
	}
	if _, _, _, err := callText(t, cs, fixture.ToolRead, nil); err != nil {
		t.Fatal(err)
	}
	e.Activity.Flush()
	if es, _ := e.Activity.Query(activity.Filter{Server: "fx"}, 1); len(es) != 1 || es[0].Surface != "mcp/fx" {
		t.Errorf("activity %+v; want the call from surface mcp/fx", es)
	}
	if e.S.Server("fx") == nil || e.S.Server("") == nil {
		t.Error("no SDK server behind an endpoint")
	}

	for path, want := range map[string]string{"/mcp/nosuch": "no server named nosuch", "/mcp/off": "server off is disabled"} {
		resp := e.get(t, path)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d %q; want 404 saying %q", path, resp.StatusCode, b, want)
		}
	}
}

// What clients are shown follows approvals, changed upstream lists and
// the config: an approved server's tools appear, a removed server's go, and
// its endpoint with them.
func TestListsFollowChanges(t *testing.T) {
	e, fx, _, q := standardEnv(t)
	agg := e.connect(t, "/mcp", nil, session2025)
	own := e.connect(t, "/mcp/fx", nil, session2025)
	waitTools(t, own, "fx's own tools", func(n []string) bool { return has(n, fixture.ToolRead) })

	if _, err := e.Approvals.ApproveServer("q", approval.ServerApproval{}); err != nil {
		t.Fatal(err)
	}
	waitTools(t, agg, "q's tools once approved", func(n []string) bool { return has(n, "q__echo", "q__write_value") })

	fx.RemoveTools(fixture.ToolDelete)
	waitTools(t, own, "delete_value gone from /mcp/fx", func(n []string) bool { return !has(n, fixture.ToolDelete) })
	waitTools(t, agg, "fx__delete_value gone from /mcp", func(n []string) bool { return !has(n, "fx__delete_value") })

	q.AddTool(&mcp.Tool{Name: "later", InputSchema: map[string]any{"type": "object"}, Annotations: fixture.ClassAnnotations("read")})
	parts.WaitFor(t, 20*time.Second, "q's new tool to be recorded", func() bool {
		for _, x := range e.Gateway.Tools("q") {
			if x.Name == "later" {
				return true
			}
		}
		return false
	})
	if out, _, code, err := callText(t, agg, "q__later", nil); err != nil || code != "TOOL_PENDING" {
		t.Errorf("q__later, new and not approved: %q %q (%v); want a TOOL_PENDING refusal", out, code, err)
	}
	if has(toolNames(t, agg), "q__later") {
		t.Error("a pending tool is listed")
	}

	e.Start(t, `{}`) // no servers left
	waitTools(t, agg, "every tool gone", func(n []string) bool { return len(n) == 0 })
	parts.WaitFor(t, 20*time.Second, "/mcp/fx to go", func() bool { return e.get(t, "/mcp/fx").StatusCode == http.StatusNotFound })
}
