package upstream

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The dispatch boundary: whether a request's bytes left Warden. A call that
// failed before that changed nothing upstream; one that failed after it has an
// unknown outcome. The mark travels in the call's context down to the
// transport, which sets it once the request is written (stdio: the line was
// written to the process; HTTP: the request body was sent).

type dispatchKey struct{}

// Dispatch records whether a call's request was sent upstream.
type Dispatch struct {
	sent   atomic.Bool
	onSent func()
}

// Sent reports whether the request left Warden.
func (d *Dispatch) Sent() bool { return d.sent.Load() }

// WithDispatch returns a context that carries a new dispatch mark. onSent, if
// not nil, runs once, right when the request has been sent.
func WithDispatch(ctx context.Context, onSent func()) (context.Context, *Dispatch) {
	d := &Dispatch{onSent: onSent}
	return context.WithValue(ctx, dispatchKey{}, d), d
}

func markSent(ctx context.Context) {
	if d, ok := ctx.Value(dispatchKey{}).(*Dispatch); ok && d.sent.CompareAndSwap(false, true) && d.onSent != nil {
		d.onSent()
	}
}

// Answered reports whether err is the upstream's own answer (a JSON-RPC error
// response), as opposed to a transport failure or a cancellation: an answered
// call has a known outcome. A refusal for want of a login is Warden's own,
// even where the SDK's client wraps it in its JSON-RPC "rejected by
// transport" error (it does on the 2026-07-28 path).
func Answered(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) && !errors.Is(err, ErrAuthRequired)
}

// ErrUnavailable is returned when the server is not connected.
var ErrUnavailable = errors.New("upstream unavailable")
