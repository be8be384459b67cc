package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/upstream"
)

// withInflight is ctx as upstream hands it back for what a server sends
// during f (f added to a router first).
func withInflight(ctx context.Context, f *inflight) context.Context {
	return upstream.WithCall(ctx, &f.up)
}

// fakeClient records what the gateway routes to one downstream client.
type fakeClient struct {
	name string

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	logs     []*mcp.LoggingMessageParams
	samples  int
	elicits  int
	roots    int
}

// Capabilities: it can answer every question.
func (c *fakeClient) Capabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}, Elicitation: &mcp.ElicitationCapabilities{}, RootsV2: &mcp.RootCapabilities{}}
}

func (c *fakeClient) Ask(ctx context.Context, _ string, q mcp.InputRequest) (mcp.InputResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch q.(type) {
	case *mcp.CreateMessageWithToolsParams:
		c.samples++
		return &mcp.CreateMessageWithToolsResult{Model: c.name}, nil
	case *mcp.ElicitParams:
		c.elicits++
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": c.name}}, nil
	}
	c.roots++
	return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///" + c.name}}}, nil
}

func (c *fakeClient) Progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	c.mu.Lock()
	c.progress = append(c.progress, p)
	c.mu.Unlock()
}

func (c *fakeClient) Log(ctx context.Context, p *mcp.LoggingMessageParams) {
	c.mu.Lock()
	c.logs = append(c.logs, p)
	c.mu.Unlock()
}

// testGateway has three servers: "s" and "t", trusted, and "q", quarantined.
func testGateway(t *testing.T) peer {
	g := newTestGateway(t)
	server := func(name string, trusted bool) *config.Server {
		return &config.Server{Name: name, URL: "http://127.0.0.1:1/mcp", Transport: "http", Trusted: trusted, CallTimeout: time.Second}
	}
	s, _ := g.conn("s")
	g.Reconcile(map[string]*config.Server{"s": s.Config(), "t": server("t", true), "q": server("q", false)})
	if !g.Exposed("s") || !g.Exposed("t") || g.Exposed("q") {
		t.Fatalf("exposed: s %v, t %v, q %v; want s and t", g.Exposed("s"), g.Exposed("t"), g.Exposed("q"))
	}
	return g
}

func TestRouterCallerIsNewestClientCall(t *testing.T) {
	r := newRouter()
	a, b := &fakeClient{name: "a"}, &fakeClient{name: "b"}
	_, doneA := r.add(&inflight{server: "s", client: a, ctx: context.Background()})
	_, doneB := r.add(&inflight{server: "s", client: b, ctx: context.Background()})
	_, doneOp := r.add(&inflight{server: "s", ctx: context.Background()}) // an operator call
	_, doneOther := r.add(&inflight{server: "other", client: a, ctx: context.Background()})
	defer doneOther()

	if f := r.caller("s"); f == nil || f.client != b {
		t.Fatalf("caller = %+v, want b's call (the newest with a client)", f)
	}
	doneB()
	if f := r.caller("s"); f == nil || f.client != a {
		t.Fatalf("after b finished, caller = %+v, want a's call", f)
	}
	doneA()
	if f := r.caller("s"); f != nil {
		t.Fatalf("only an operator call is left, caller = %+v, want none", f)
	}
	doneOp()
	if len(r.byServer["s"]) != 0 {
		t.Fatalf("finished calls still tracked: %v", r.byServer)
	}
	if f := r.caller("nobody"); f != nil {
		t.Fatalf("caller of an idle server = %+v", f)
	}
}

func TestRouterProgressTokens(t *testing.T) {
	r := newRouter()
	f1 := &inflight{server: "s", client: &fakeClient{}, ctx: context.Background(), token: "client-token"}
	f2 := &inflight{server: "s", client: &fakeClient{}, ctx: context.Background(), token: 42.0}
	f3 := &inflight{server: "s", client: &fakeClient{}, ctx: context.Background()}
	t1, done1 := r.add(f1)
	t2, done2 := r.add(f2)
	t3, done3 := r.add(f3)
	defer done2()
	defer done3()
	if t1 == "" || t2 == "" || t1 == t2 {
		t.Fatalf("minted tokens %q and %q: want two distinct tokens", t1, t2)
	}
	// Unguessable: 26 random base32 characters (130 bits) after the prefix.
	for _, tok := range []string{t1, t2} {
		if rest, ok := strings.CutPrefix(tok, "warden-"); !ok || len(rest) != 26 {
			t.Fatalf("minted token %q: want warden- and 26 random characters", tok)
		}
	}
	if t3 != "" {
		t.Fatalf("a call without a progress token got upstream token %q", t3)
	}
	if r.byProgressToken(t1) != f1 || r.byProgressToken(t2) != f2 {
		t.Fatal("minted tokens do not lead back to their calls")
	}
	if r.byProgressToken("client-token") != nil || r.byProgressToken(42.0) != nil {
		t.Fatal("a client's own token must not be accepted from upstream: only minted ones")
	}
	done1()
	if r.byProgressToken(t1) != nil {
		t.Fatal("a finished call's token still routes")
	}
}

func TestProgressGoesToItsCallerWithTheClientToken(t *testing.T) {
	g := testGateway(t)
	a, b := &fakeClient{name: "a"}, &fakeClient{name: "b"}
	ta, doneA := g.router.add(&inflight{server: "s", client: a, ctx: context.Background(), token: "tok-a"})
	defer doneA()
	tb, doneB := g.router.add(&inflight{server: "s", client: b, ctx: context.Background(), token: 7.0})
	defer doneB()
	g.Progress("s", &mcp.ProgressNotificationParams{ProgressToken: ta, Progress: 1})
	g.Progress("s", &mcp.ProgressNotificationParams{ProgressToken: tb, Progress: 2})
	g.Progress("s", &mcp.ProgressNotificationParams{ProgressToken: "unknown", Progress: 3})
	// Another server that learned a's token cannot speak into a's call.
	g.Progress("t", &mcp.ProgressNotificationParams{ProgressToken: ta, Progress: 4})
	if len(a.progress) != 1 || a.progress[0].ProgressToken != "tok-a" || a.progress[0].Progress != 1 {
		t.Fatalf("a got %+v, want its own progress with its own token", a.progress)
	}
	if len(b.progress) != 1 || b.progress[0].ProgressToken != 7.0 || b.progress[0].Progress != 2 {
		t.Fatalf("b got %+v, want its own progress with its own token", b.progress)
	}
}

// A server-to-client request that came with a call (its context names the
// call) goes to that call's client, whichever call is newest.
func TestServerRequestsFollowTheirCall(t *testing.T) {
	g := testGateway(t)
	a, b := &fakeClient{name: "a"}, &fakeClient{name: "b"}
	fa := &inflight{server: "s", client: a, ctx: context.Background()}
	fb := &inflight{server: "s", client: b, ctx: context.Background()}
	_, doneA := g.router.add(fa)
	defer doneA()
	_, doneB := g.router.add(fb) // b is the newest
	defer doneB()

	ctxA := withInflight(context.Background(), fa)
	res, err := ask[mcp.CreateMessageWithToolsResult](g, ctxA, "s", &mcp.CreateMessageWithToolsParams{})
	if err != nil || res.Model != "a" {
		t.Fatalf("sampling with a's call context answered by %v (%v), want a", res, err)
	}
	er, err := ask[mcp.ElicitResult](g, ctxA, "s", &mcp.ElicitParams{Message: "q"})
	if err != nil || er.Content["who"] != "a" {
		t.Fatalf("elicitation with a's call context answered by %v (%v), want a", er, err)
	}
	rr, err := ask[mcp.ListRootsResult](g, ctxA, "s", &mcp.ListRootsParams{})
	if err != nil || len(rr.Roots) != 1 || rr.Roots[0].URI != "file:///a" {
		t.Fatalf("roots with a's call context answered %v (%v), want a's", rr, err)
	}
	if b.samples+b.elicits+b.roots != 0 {
		t.Fatalf("b was asked %d/%d/%d times for a's call", b.samples, b.elicits, b.roots)
	}

	// Without a call in the context: the newest call's client.
	res, err = ask[mcp.CreateMessageWithToolsResult](g, context.Background(), "s", &mcp.CreateMessageWithToolsParams{})
	if err != nil || res.Model != "b" {
		t.Fatalf("sampling with no call context answered by %v (%v), want the newest caller b", res, err)
	}
}

// An operator call (CLI, REST) has no client: a request that came with it is
// refused rather than sent to some other session's client.
func TestServerRequestOfOperatorCallIsNotSentToAnotherClient(t *testing.T) {
	g := testGateway(t)
	a := &fakeClient{name: "a"}
	_, doneA := g.router.add(&inflight{server: "s", client: a, ctx: context.Background()})
	defer doneA()
	op := &inflight{server: "s", ctx: context.Background()}
	_, doneOp := g.router.add(op)
	defer doneOp()
	_, err := ask[mcp.CreateMessageWithToolsResult](g, withInflight(context.Background(), op), "s", &mcp.CreateMessageWithToolsParams{})
	if !errors.Is(err, errNoCaller) {
		t.Fatalf("sampling during an operator call: %v, want errNoCaller", err)
	}
	_, err = ask[mcp.ElicitResult](g, withInflight(context.Background(), op), "s", &mcp.ElicitParams{})
	if !errors.Is(err, errNoCaller) {
		t.Fatalf("elicitation during an operator call: %v, want errNoCaller", err)
	}
	rr, err := ask[mcp.ListRootsResult](g, withInflight(context.Background(), op), "s", &mcp.ListRootsParams{})
	if err != nil || len(rr.Roots) != 0 {
		t.Fatalf("roots during an operator call: %v %v, want an empty list", rr, err)
	}
	if a.samples+a.elicits+a.roots != 0 {
		t.Fatal("another session's client was asked on behalf of an operator call")
	}
	// With no caller at all, sampling fails clearly.
	g2 := testGateway(t)
	if _, err := ask[mcp.CreateMessageWithToolsResult](g2, context.Background(), "s", &mcp.CreateMessageWithToolsParams{}); !errors.Is(err, errNoCaller) {
		t.Fatalf("sampling with nobody waiting: %v, want errNoCaller", err)
	}
}

func TestLogGoesToTheCallerWhileACallIsInFlight(t *testing.T) {
	g := testGateway(t)
	a, b := &fakeClient{name: "a"}, &fakeClient{name: "b"}
	fa := &inflight{server: "s", client: a, ctx: context.Background()}
	_, doneA := g.router.add(fa)
	_, doneB := g.router.add(&inflight{server: "s", client: b, ctx: context.Background()})
	// A message that came with a's call goes to a, though b's call is newer.
	g.Log(withInflight(context.Background(), fa), "s", &mcp.LoggingMessageParams{Level: "info", Data: "for a"})
	// One that came on its own goes to the newest caller.
	g.Log(context.Background(), "s", &mcp.LoggingMessageParams{Level: "info", Data: "for anyone"})
	doneA()
	doneB()
	if len(a.logs) != 1 || a.logs[0].Data != "for a" {
		t.Fatalf("a got logs %+v, want its own", a.logs)
	}
	if len(b.logs) != 1 || b.logs[0].Data != "for anyone" {
		t.Fatalf("b got logs %+v, want only the unattached one", b.logs)
	}
	g.Log(context.Background(), "s", &mcp.LoggingMessageParams{Level: "info", Data: "after"}) // no call, no views: dropped
	if len(a.logs) != 1 || len(b.logs) != 1 {
		t.Fatalf("a log after the calls ended went to a finished caller: %+v %+v", a.logs, b.logs)
	}
}

// relatedContext ends when either the downstream call or the upstream's
// request ends.
func TestRelatedContext(t *testing.T) {
	down, cancelDown := context.WithCancel(context.Background())
	up, cancelUp := context.WithCancel(context.Background())
	ctx, stop := relatedContext(&inflight{ctx: down}, up)
	cancelUp()
	<-ctx.Done()
	stop()
	cancelDown()

	down2, cancelDown2 := context.WithCancel(context.Background())
	ctx2, stop2 := relatedContext(&inflight{ctx: down2}, context.Background())
	defer stop2()
	cancelDown2()
	<-ctx2.Done()
}

// A quarantined server reaches no client, not even through a call admitted
// before it was quarantined: its notifications are dropped and its requests
// answered with an error.
func TestQuarantinedServerReachesNoClient(t *testing.T) {
	g := testGateway(t)
	a := &fakeClient{name: "a"}
	f := &inflight{server: "q", client: a, ctx: context.Background(), token: "tok"}
	tok, done := g.router.add(f)
	defer done()
	ctx := withInflight(context.Background(), f)

	g.Progress("q", &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1})
	g.Log(ctx, "q", &mcp.LoggingMessageParams{Level: "info", Data: "from q"})
	g.Log(context.Background(), "q", &mcp.LoggingMessageParams{Level: "info", Data: "from q"})
	if _, err := ask[mcp.CreateMessageWithToolsResult](g, ctx, "q", &mcp.CreateMessageWithToolsParams{}); !errors.Is(err, errNotExposed) {
		t.Fatalf("sampling from a quarantined server: %v, want errNotExposed", err)
	}
	if _, err := ask[mcp.ElicitResult](g, ctx, "q", &mcp.ElicitParams{}); !errors.Is(err, errNotExposed) {
		t.Fatalf("elicitation from a quarantined server: %v, want errNotExposed", err)
	}
	if _, err := ask[mcp.ListRootsResult](g, ctx, "q", &mcp.ListRootsParams{}); !errors.Is(err, errNotExposed) {
		t.Fatalf("roots/list from a quarantined server: %v, want errNotExposed", err)
	}
	if _, err := ask[mcp.ListRootsResult](g, context.Background(), "gone", &mcp.ListRootsParams{}); !errors.Is(err, errNotExposed) {
		t.Fatalf("roots/list from a server not configured: %v, want errNotExposed", err)
	}
	if len(a.progress)+len(a.logs)+a.samples+a.elicits+a.roots != 0 {
		t.Fatalf("a quarantined server reached a client: %+v", a)
	}
}

// ask is g.Ask with its answer as the type q asks for.
func ask[T any](g peer, ctx context.Context, server string, q mcp.InputRequest) (*T, error) {
	a, err := g.Ask(ctx, server, "", q)
	if err != nil {
		return nil, err
	}
	return any(a).(*T), nil
}
