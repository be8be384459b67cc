package upstream

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
)

// Call is one tools/call on its way upstream, with what its caller needs
// of the call's life: the call's request is marked once it left Warden (the
// dispatch boundary: a call that failed before it changed nothing
// upstream; one that failed after it has an unknown outcome), and the work
// left after its answer can wait for the caller.
type Call struct {
	Params *mcp.CallToolParams
	// Caller is what the calling client can answer, nil for an operator
	// call (see askable).
	Caller *mcp.ClientCapabilities
	// CallerPerRequest: the caller says what it can answer with each
	// request (a 2026-07-28 client), not once for its session.
	CallerPerRequest bool
	// OnSent, if set, runs once, right when the request has left Warden.
	OnSent func()
	// After, if set, takes the work left once the answer is read (see
	// answer.After); else CallTool does it before it returns.
	After *answer.After

	sent atomic.Bool
}

// Sent reports whether the call's request left Warden.
func (c *Call) Sent() bool { return c.sent.Load() }

// The mark is set by the transport, below the SDK: the call rides in the
// context of its request down to it (stdio: the line was written to the
// process; HTTP: the request body was sent). Only this package sets and
// reads it.
type dispatchKey struct{}

func withCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, dispatchKey{}, c)
}

func markSent(ctx context.Context) {
	if c, ok := ctx.Value(dispatchKey{}).(*Call); ok && c != nil && c.sent.CompareAndSwap(false, true) && c.OnSent != nil {
		c.OnSent()
	}
}

// after leaves fn to c.After, or does it now.
func (c *Call) after(fn func()) {
	if c.After == nil {
		fn()
		return
	}
	c.After.Add(fn)
}

// Answered reports whether err is the upstream's own answer (a JSON-RPC error
// response), as opposed to a transport failure or a cancellation: an answered
// call has a known outcome. A refusal for want of a login is Warden's own.
func Answered(err error) bool {
	return Answer(err) != nil
}

// Answer is the upstream's own JSON-RPC error in err, nil if err is not the
// upstream's answer. Calling a 2026-07-28 upstream, the SDK's client wraps
// failures of its own in a JSON-RPC error too, "rejected by transport" (-32005): a
// request that did not reach the server, or whose answer never came, a
// refusal for want of a login; that one is not an answer, though an answer
// it wraps (a non-2xx response's JSON-RPC body) is.
func Answer(err error) *jsonrpc.Error {
	if errors.Is(err, ErrAuthRequired) {
		return nil
	}
	var found *jsonrpc.Error
	walk(err, func(e error) bool {
		je, ok := e.(*jsonrpc.Error)
		if ok && !(je.Code == rejectedByTransport.Code && je.Message == rejectedByTransport.Message) {
			found = je
			return false
		}
		return true
	})
	return found
}

// rejectedByTransport is the SDK client's own error for a request its
// transport failed.
var rejectedByTransport = jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// walk visits err's tree depth first, as errors.As does, while visit
// returns true.
func walk(err error, visit func(error) bool) bool {
	if err == nil {
		return true
	}
	if !visit(err) {
		return false
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return walk(u.Unwrap(), visit)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if !walk(e, visit) {
				return false
			}
		}
	}
	return true
}

// ErrUnavailable is returned when the server is not connected.
var ErrUnavailable = errors.New("upstream unavailable")
