package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/question"
	"github.com/wardenmcp/warden/upstream"
)

// inflight is a client's request on its way through Warden, the gateway's
// carrier of it: up is what upstream carries of it (and hands back with
// what the server sends during it), and the rest routes that traffic
// (progress, log messages, sampling, elicitation, roots) back to the
// downstream session that caused it.
type inflight struct {
	server     string
	client     Client          // nil for operator calls (CLI, REST)
	ctx        context.Context // the downstream request's context: sends on it go on its stream
	token      any             // the client's progress token, if it asked for progress
	perRequest bool            // the client says what it can answer with each request
	up         upstream.Call   // its Origin is this inflight (see router.add)
}

// Capabilities is what the client can answer (upstream.Origin).
func (f *inflight) Capabilities() *mcp.ClientCapabilities {
	if f.client == nil {
		return nil
	}
	return f.client.Capabilities()
}

// PerRequest reports whether the client says what it can answer with each
// request (upstream.Origin).
func (f *inflight) PerRequest() bool { return f.client != nil && f.perRequest }

// router tracks in-flight calls per server and per minted progress token.
type router struct {
	mu       sync.Mutex
	byServer map[string][]*inflight
	byToken  map[string]*inflight
}

func newRouter() *router {
	return &router{byServer: map[string][]*inflight{}, byToken: map[string]*inflight{}}
}

// add registers a call and returns the progress token to send upstream ("" if
// the client asked for none) and the function that unregisters it. Tokens
// are random (130 bits): a server that could guess another call's token
// could speak into it (Progress checks the sender too).
func (r *router) add(f *inflight) (upstreamToken string, done func()) {
	f.up.Origin = f
	if f.token != nil {
		upstreamToken = "warden-" + rand.Text()
	}
	r.mu.Lock()
	r.byServer[f.server] = append(r.byServer[f.server], f)
	if upstreamToken != "" {
		r.byToken[upstreamToken] = f
	}
	r.mu.Unlock()
	return upstreamToken, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		list := r.byServer[f.server]
		for i, g := range list {
			if g == f {
				r.byServer[f.server] = append(list[:i:i], list[i+1:]...)
				break
			}
		}
		if len(r.byServer[f.server]) == 0 {
			delete(r.byServer, f.server)
		}
		delete(r.byToken, upstreamToken)
	}
}

// caller picks the downstream session that an upstream's request belongs to:
// the most recent in-flight call from a client session. MCP ties such requests
// to the call that caused them; with several calls in flight on one upstream
// connection the newest is the best guess the protocol allows.
func (r *router) caller(server string) *inflight {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.byServer[server]
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].client != nil {
			return list[i]
		}
	}
	return nil
}

func (r *router) byProgressToken(tok any) *inflight {
	s, ok := tok.(string)
	if !ok {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byToken[s]
}

var errNoCaller = errors.New("no client session is waiting on this server")

// callerFor is the call an upstream's request belongs to: the one its
// context names (upstream.CallFrom; on an HTTP upstream, what came on the
// call's own response stream) when it came with a call, else the best
// guess (see caller).
func (r *router) callerFor(ctx context.Context, server string) *inflight {
	if up, ok := upstream.CallFrom(ctx); ok {
		if f, ok := up.Origin.(*inflight); ok && f.server == server {
			if f.client == nil {
				return nil // an operator call: there is no client to ask
			}
			return f
		}
	}
	return r.caller(server)
}

// relatedContext is the downstream call's context (so the SDK sends on that
// call's stream), cancelled also when the upstream's own request is.
func relatedContext(f *inflight, upstream context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(f.ctx)
	stop := context.AfterFunc(upstream, cancel)
	return ctx, func() { stop(); cancel() }
}

// The upstream.Peer side of routing (see peer). What a server sends
// reaches only the calls and sessions made to that server, and nothing of a
// server that is quarantined, disabled or removed reaches any client: its
// requests are answered with an error, its notifications dropped.

// Exposed reports whether clients may hear from server.
func (g peer) Exposed(server string) bool {
	_, live := g.conn(server)
	return live && !g.deps.Approvals.Quarantined(server)
}

var errNotExposed = errors.New("the server is quarantined or disabled in Warden, so it may not reach any client until an operator approves it")

// askedBy is the call a server's request goes to, or why there is none.
func (g peer) askedBy(ctx context.Context, server, what string) (*inflight, error) {
	if !g.Exposed(server) {
		return nil, fmt.Errorf("%s from %q refused: %w", what, server, errNotExposed)
	}
	if f := g.router.callerFor(ctx, server); f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("%s from %q: %w", what, server, errNoCaller)
}

// Ask puts a server's question to the client of the call it came with, if
// that client declared it can answer it: else it is refused with
// MissingRequiredClientCapability, whatever the client's era.
// A roots request with no client waiting is answered with no roots.
func (g peer) Ask(ctx context.Context, server, key string, q mcp.InputRequest) (mcp.InputResponse, error) {
	f, err := g.askedBy(ctx, server, question.Method(q))
	if _, roots := q.(*mcp.ListRootsParams); roots && errors.Is(err, errNoCaller) {
		return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := question.Capable(f.client.Capabilities(), q); err != nil {
		return nil, err
	}
	rctx, cancel := relatedContext(f, ctx)
	defer cancel()
	return f.client.Ask(rctx, key, q)
}

// Progress goes to the call its token was minted for, and only if server is
// the one that call went to.
func (g peer) Progress(server string, p *mcp.ProgressNotificationParams) {
	f := g.router.byProgressToken(p.ProgressToken)
	if f == nil || f.server != server || f.client == nil || !g.Exposed(server) {
		return
	}
	q := *p
	q.ProgressToken = f.token
	f.client.Progress(f.ctx, &q)
}

// Log sends an upstream log message to the client whose call is in flight,
// or, with none, to every client session of the surfaces that show server.
func (g peer) Log(ctx context.Context, server string, p *mcp.LoggingMessageParams) {
	if !g.Exposed(server) {
		return
	}
	if f := g.router.callerFor(ctx, server); f != nil {
		f.client.Log(f.ctx, p)
		return
	}
	g.views.each(func(v View) { v.Log(server, p) })
}

// ResourceUpdated passes an update on to the views, which send it only to
// sessions that subscribed to the resource through server.
func (g peer) ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	if !g.Exposed(server) {
		return
	}
	g.views.each(func(v View) { v.ResourceUpdated(server, p) })
}
