package gateway_test

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// servers parses a config's mcpServers JSON.
func servers(t *testing.T, mcpServers string) map[string]*config.Server {
	t.Helper()
	cfg, err := config.Parse(t.TempDir()+"/config.json", []byte(`{"mcpServers": `+mcpServers+`}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Servers
}

// Reconcile applies a policy change without reconnecting, takes a disabled
// server out (a call says it is disabled), brings it back, restarts a
// server whose connection changed, and removes one gone from the config;
// the views hear of each.
func TestReconcile(t *testing.T) {
	fx, other := fixture.NewServer(fixture.Options{}), fixture.NewServer(fixture.Options{})
	url, otherURL := fx.Serve(t), other.Serve(t)
	p := start(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, url))
	g := p.Gateway
	v := &view{}
	g.AddView(v)
	p.WaitListed(t, "fx")
	if got := g.Servers(); !slices.Equal(got, []string{"fx"}) {
		t.Fatalf("servers %v", got)
	}
	inits := fx.Initializes()

	// Policy only: the same connection, the tool now hidden.
	changes := v.count("fx")
	g.Reconcile(servers(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true, "tools": {"echo": {"hidden": true}}}}`, url)))
	if fx.Initializes() != inits {
		t.Error("a policy change reconnected the upstream")
	}
	for _, x := range g.Tools("fx") {
		if x.Name == fixture.ToolEcho && (!x.Hidden || x.Visible) {
			t.Errorf("echo after it was hidden: %+v", x)
		}
	}
	if v.count("fx") == changes {
		t.Error("the views were not told of the policy change")
	}
	expectUnknownTool(t, p, "fx", fixture.ToolEcho)

	// Disabled: out of the live servers, and a call says why.
	g.Reconcile(servers(t, fmt.Sprintf(`{"fx": {"url": %q, "disabled": true}}`, url)))
	if len(g.Servers()) != 0 || !g.Disabled("fx") || g.Tools("fx") != nil {
		t.Fatalf("after disabling fx: servers %v, disabled %v, tools %v", g.Servers(), g.Disabled("fx"), g.Tools("fx"))
	}
	expectRefusal(t, p, "fx", fixture.ToolRead, "", nil, gateway.CodeUnavailable, "disabled in the config")

	// Enabled again: listed again, its approvals kept.
	g.Reconcile(servers(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, url)))
	p.WaitListed(t, "fx")
	if g.Disabled("fx") {
		t.Error("fx still counts as disabled")
	}
	if res, err := call(t, p, "fx", fixture.ToolRead, "", nil); err != nil || res.IsError {
		t.Fatalf("a call after re-enabling: %q (%v)", text(res), err)
	}

	// A new URL: a different upstream, whose tools are served from then on.
	other.AddTool(mcpTool("only_on_other"))
	g.Reconcile(servers(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, otherURL)))
	waitTool(t, p, "fx", "only_on_other", func(x gateway.Tool) bool { return true })

	// Removed: not configured any more.
	g.Reconcile(map[string]*config.Server{})
	if len(g.Servers()) != 0 || g.Disabled("fx") || g.Tools("fx") != nil {
		t.Fatalf("after removing fx: servers %v, disabled %v, tools %v", g.Servers(), g.Disabled("fx"), g.Tools("fx"))
	}
	expectRefusal(t, p, "fx", fixture.ToolRead, "", nil, gateway.CodeUnavailable, "not configured")
	if v.count("fx") < 5 {
		t.Errorf("the views heard of fx %d times over five changes", v.count("fx"))
	}
}

// An on-demand server with approved tools is listed from their pinned
// definitions without running; the first call starts it, and it stops
// again when idle.
func TestOnDemandListedFromApprovals(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	url := fx.Serve(t)
	p := parts.New(t, slog.New(slog.DiscardHandler))
	g := p.Gateway
	onDemand := func(idle time.Duration) map[string]*config.Server {
		s := servers(t, fmt.Sprintf(`{"od": {"url": %q, "trusted": true}}`, url))
		s["od"].OnDemand, s["od"].IdleTimeout = true, idle
		return s
	}

	// First start: nothing approved yet, so it runs to be listed (and
	// baselined, being trusted), then stops when idle.
	g.Reconcile(onDemand(50 * time.Millisecond))
	p.WaitListed(t, "od")
	c, _ := g.Upstream("od")
	parts.WaitFor(t, 20*time.Second, "od to stop when idle", func() bool { return c.Connection().State == "idle" })

	// A changed idle timeout is a new connection: listed from the pinned
	// definitions, without a word to the server.
	sent := len(fx.HTTP().Requests())
	g.Reconcile(onDemand(time.Minute))
	if names := toolNames(p, "od"); !slices.Contains(names, fixture.ToolWrite) {
		t.Fatalf("od lists %v before it runs; want its approved tools", names)
	}
	c, _ = g.Upstream("od")
	if reqs := fx.HTTP().Requests(); c.Connection().State != "idle" || len(reqs) != sent {
		t.Fatalf("od was started to be listed (%s, requests %+v)", c.Connection().State, reqs[sent:])
	}
	res, err := call(t, p, "od", fixture.ToolWrite, `{"value":"on demand"}`, nil)
	if err != nil || res.IsError || fx.Value("") != "on demand" {
		t.Fatalf("the first call to od: %q (%v)", text(res), err)
	}
	if c.Connection().State != "ready" {
		t.Error("od is not running after the call that started it")
	}
}

func (v *view) count(server string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, s := range v.changed {
		if s == server {
			n++
		}
	}
	return n
}

// mcpTool is a read tool named name.
func mcpTool(name string) *mcp.Tool {
	return &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: fixture.ClassAnnotations("read")}
}
