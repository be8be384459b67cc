package upstream

import (
	"context"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
)

// Call is one client request on its way upstream, made by the gateway: a
// tools/call (Params), or a prompt, resource or completion request (no
// Params). It rides in the context of its upstream request, the one value
// Warden puts there (CallFrom), down to the transport, which marks it sent
// once the request left Warden: the dispatch boundary, before which a call
// changed nothing upstream and after which a failed one has an unknown
// outcome.
type Call struct {
	Params *mcp.CallToolParams
	// Origin is where the call came from: what its client can answer,
	// and, for the gateway's Peer, the route back to that client.
	Origin Origin
	// Admit, if set, runs once the session is ready and right before the
	// request is sent (never across the wait for the session); an error
	// ends the call unsent. The release it returns, with an error too,
	// runs once: when the request has left Warden, or when the call ends.
	Admit func() (release func(), err error)
	// After, if set, takes the work left once the answer is read (see
	// answer.After); else the call does it before it returns.
	After *answer.After
	// Task: the call is a task's, and its caller takes a task handle: an
	// upstream that speaks the tasks extension gets it as a task request
	// (see passesTask), and may answer its own handle (answer.Result's
	// TaskHandle).
	Task bool

	sent     atomic.Bool
	release  func()
	released atomic.Bool
	hold     *answerHold // the room a tools/call's answer holds
}

// Origin is the client a call came from, as upstream sees it.
type Origin interface {
	// Capabilities is what the client can answer, nil for an operator's
	// call, which can answer nothing (see askable).
	Capabilities() *mcp.ClientCapabilities
	// PerRequest: the client says what it can answer with each request
	// (a 2026-07-28 client), not once for its session.
	PerRequest() bool
}

// Sent reports whether the call's request left Warden.
func (c *Call) Sent() bool { return c.sent.Load() }

type callKey struct{}

// CallFrom is the call whose upstream request ctx belongs to, if any:
// transports mark it sent, and what the upstream sends back during it
// (its questions, log messages) goes to its Origin.
func CallFrom(ctx context.Context) (*Call, bool) {
	c, ok := ctx.Value(callKey{}).(*Call)
	return c, ok && c != nil
}

// WithCall marks ctx as call's (nil: as no call's, for a request of
// Warden's own). Conn's requests do it themselves.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// markSent marks ctx's call sent, releasing what its admission holds.
func markSent(ctx context.Context) {
	if c, ok := CallFrom(ctx); ok && c.sent.CompareAndSwap(false, true) {
		c.letGo()
	}
}

// admit runs the call's admission, if any.
func (c *Call) admit() error {
	if c.Admit == nil {
		return nil
	}
	var err error
	c.release, err = c.Admit()
	return err
}

// letGo runs the admission's release, once.
func (c *Call) letGo() {
	if c.release != nil && c.released.CompareAndSwap(false, true) {
		c.release()
	}
}

// caller is what the call's client can answer, and whether it says so
// with each request.
func (c *Call) caller() (*mcp.ClientCapabilities, bool) {
	if c.Origin == nil {
		return nil, false
	}
	return c.Origin.Capabilities(), c.Origin.PerRequest()
}

// after leaves fn to c.After, or does it now.
func (c *Call) after(fn func()) {
	if c.After == nil {
		fn()
		return
	}
	c.After.Add(fn)
}
