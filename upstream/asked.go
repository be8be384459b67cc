package upstream

import (
	"context"
	"encoding/json"
	"sync"
)

// askedTable holds the requests an upstream sent on one call's event stream
// that are still being answered, so that its notifications/cancelled for
// one ends that answer, as the SDK client ends the handler of a request
// its server cancelled. The answer still goes back (an error), as the
// SDK client's does.
type askedTable struct {
	mu      sync.Mutex
	pending map[string]context.CancelFunc // the request's id, as JSON → ends its answer
}

// start is the context for answering the request with id, and the func to
// call once it is answered.
func (a *askedTable) start(ctx context.Context, id json.RawMessage) (context.Context, func()) {
	actx, cancel := context.WithCancel(ctx)
	key := string(id)
	a.mu.Lock()
	if a.pending == nil {
		a.pending = map[string]context.CancelFunc{}
	}
	a.pending[key] = cancel
	a.mu.Unlock()
	return actx, func() {
		a.mu.Lock()
		delete(a.pending, key)
		a.mu.Unlock()
		cancel()
	}
}

// cancel ends the answer to the request a notifications/cancelled names.
func (a *askedTable) cancel(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	a.mu.Lock()
	cancel := a.pending[string(p.RequestID)]
	a.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
