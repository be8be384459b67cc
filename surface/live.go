package surface

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// live is a downstream session the SDK initialized, as the fast path needs
// it: its log level, its fast calls in flight (for cancellation) and the
// answers it owes to requests Warden sent it on a fast call's stream.
type live struct {
	ss *mcp.ServerSession

	mu      sync.Mutex
	level   mcp.LoggingLevel
	calls   map[string]context.CancelFunc   // JSON-RPC id of a fast call → cancel
	pending map[string]chan json.RawMessage // id of a request to the client → its answer
}

// track registers an initialized session until it ends.
func (v *view) track(ss *mcp.ServerSession) {
	id := ss.ID()
	if id == "" {
		return
	}
	l := &live{ss: ss, calls: map[string]context.CancelFunc{}, pending: map[string]chan json.RawMessage{}}
	v.sessMu.Lock()
	v.sessions[id] = l
	v.sessMu.Unlock()
	go func() {
		_ = ss.Wait()
		v.sessMu.Lock()
		delete(v.sessions, id)
		v.sessMu.Unlock()
		v.g.Unfollow(ss) // its resource subscriptions end with it
	}()
}

func (v *view) live(id string) *live {
	v.sessMu.Lock()
	defer v.sessMu.Unlock()
	return v.sessions[id]
}

func (v *view) liveFor(ss *mcp.ServerSession) *live {
	if ss == nil {
		return nil
	}
	return v.live(ss.ID())
}

func (l *live) setLevel(level mcp.LoggingLevel) {
	l.mu.Lock()
	l.level = level
	l.mu.Unlock()
}

// wants reports whether the session asked for messages at level.
func (l *live) wants(level mcp.LoggingLevel) bool {
	l.mu.Lock()
	min := l.level
	l.mu.Unlock()
	return min != "" && levelRank[level] >= levelRank[min]
}

var levelRank = map[mcp.LoggingLevel]int{
	"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7,
}

// deliver hands the client's answer to a request Warden sent it.
func (l *live) deliver(id string, msg json.RawMessage) bool {
	l.mu.Lock()
	ch, ok := l.pending[id]
	delete(l.pending, id)
	l.mu.Unlock()
	if ok {
		ch <- msg
	}
	return ok
}

// cancel ends a fast call the client cancelled.
func (l *live) cancel(id string) bool {
	l.mu.Lock()
	c, ok := l.calls[id]
	l.mu.Unlock()
	if ok {
		c()
	}
	return ok
}
