package surface

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"
)

// A call the SDK's handler serves (a request the fast paths leave to it)
// runs in a context of the SDK's session, not of its HTTP request: the SDK
// would run a write whose client went away to its end and drop the answer.
// Each POST toSDK hands on is named in requestHeader (as callerHeader, set
// here alone, a client's own replaced), and a call finds its request's
// context by that name: a client gone away cancels its call as on the fast
// paths, and a write sent meanwhile latches.

const requestHeader = "Warden-Request"

// requests are the POSTs the SDK's handler serves now, by name.
var requests sync.Map // string → context.Context

// named names r until the returned func is called.
func named(r *http.Request) (done func()) {
	name := rand.Text()
	r.Header.Set(requestHeader, name)
	requests.Store(name, r.Context())
	return func() { requests.Delete(name) }
}

// untilGone is ctx, cancelled also when the client of the POST whose
// header is h goes away, and its cancel.
func untilGone(ctx context.Context, h http.Header) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	rc, ok := requests.Load(h.Get(requestHeader))
	if !ok {
		return ctx, cancel
	}
	stop := context.AfterFunc(rc.(context.Context), cancel)
	return ctx, func() { stop(); cancel() }
}
