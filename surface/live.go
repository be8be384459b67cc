package surface

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/metrics"
	"github.com/wardenmcp/warden/protocol"
)

// live is a downstream session, known from the moment the SDK names it (so
// that all its requests count as activity, also an event stream opened
// before the client's initialized notification is handled), and as the
// fast path needs it once initialized: its log level, its fast calls in
// flight (for cancellation) and the answers it owes to requests Warden sent
// it on a fast call's stream.
type live struct {
	ss   atomic.Pointer[mcp.ServerSession] // set once the client has initialized
	seen atomic.Int64                      // when a request of the session last began or ended (Unix ns)
	busy atomic.Int32                      // its requests in progress (an open GET stream counts)

	// A session that has done no real work (no request but initialize and
	// ping) is what a flood of sessions is made of: it idles out sooner,
	// and at the session limit a new session takes the place of the one
	// born first (see evictUnused).
	born    time.Time
	used    atomic.Bool
	evicted atomic.Bool // chosen to make room: closing

	mu      sync.Mutex
	owner   string // the known caller who began it (callers.go); "" for anyone
	level   mcp.LoggingLevel
	calls   map[string]context.CancelFunc   // JSON-RPC id of a fast call → cancel
	early   map[string]time.Time            // ids cancelled before their call came → when
	pending map[string]chan json.RawMessage // id of a request to the client → its answer

	adopted *mcp.StreamableServerTransport // a session recorded elsewhere, served here (shared.go)
	touched atomic.Int64                   // when its record's last use was written (Unix ns)

	// Log messages no call of the session waits for go through a queue of
	// at most maxQueued, sent by one goroutine per session: a client that
	// does not keep up loses the excess instead of holding Warden's memory
	// or delaying the other sessions.
	out      chan notice
	outMu    sync.Mutex
	outEnded bool
	drainer  sync.Once
	gone     chan struct{} // closed when the session has ended
}

type notice struct {
	server string
	p      *mcp.LoggingMessageParams
}

const maxQueued = 256

// A request and its cancellation travel on different connections, and the
// cancellation can come first: it is kept for earlyFor, at most maxEarly.
const (
	earlyFor = 2 * time.Second
	maxEarly = 64
)

func newLive() *live {
	l := &live{calls: map[string]context.CancelFunc{}, early: map[string]time.Time{}, pending: map[string]chan json.RawMessage{},
		out: make(chan notice, maxQueued), gone: make(chan struct{})}
	l.born = time.Now()
	l.seen.Store(l.born.UnixNano())
	return l
}

// use notes a message of method from the session's client: anything but
// initialize, ping and notifications is real work.
func (l *live) use(method string) {
	if l != nil && method != "initialize" && method != "ping" && !strings.HasPrefix(method, "notifications/") && !l.used.Load() {
		l.used.Store(true)
	}
}

// newSessionID names a new session for the SDK (ServerOptions.GetSessionID)
// and starts knowing it.
func (v *view) newSessionID() string {
	id := rand.Text()
	v.sessMu.Lock()
	v.sessions[id] = newLive()
	v.sessMu.Unlock()
	return id
}

// track marks a session initialized, and forgets it when it ends.
func (v *view) track(ss *mcp.ServerSession) {
	id := ss.ID()
	if id == "" {
		return
	}
	v.sessMu.Lock()
	l := v.sessions[id]
	if l == nil {
		l = newLive()
		v.sessions[id] = l
	}
	v.sessMu.Unlock()
	if !l.ss.CompareAndSwap(nil, ss) {
		return // tracked at initialize already (shared.go)
	}
	client, protocol := "unknown", ""
	if p := ss.InitializeParams(); p != nil {
		protocol = p.ProtocolVersion
		if p.ClientInfo != nil {
			client = strings.TrimSpace(p.ClientInfo.Name + " " + p.ClientInfo.Version)
		}
	}
	v.log.Info("client session initialized", "session", id, "client", client, "protocol", protocol)
	go func() {
		_ = ss.Wait()
		v.log.Info("client session ended", "session", id, "client", client)
		v.sessMu.Lock()
		delete(v.sessions, id)
		v.sessMu.Unlock()
		l.cancelAll() // a call outliving its session could answer no one
		close(l.gone)
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

// enter and leave bracket each request of the session.
func (l *live) enter() { l.busy.Add(1); l.seen.Store(time.Now().UnixNano()) }
func (l *live) leave() { l.seen.Store(time.Now().UnixNano()); l.busy.Add(-1) }

// closeIdle ends the sessions that have had no request in progress for
// idle: a client that went away without ending its session would
// otherwise hold it for good. A client that comes back gets 404 and starts
// a new session, as the protocol has it.
//
// A session not initialized within uninitIdle (most often a request without
// a session that the SDK named and ended at once) is forgotten then; one
// that has done no real work is closed after unusedIdle.
func (v *view) closeIdle(idle, uninitIdle, unusedIdle time.Duration) {
	now := time.Now()
	cutoff, uninitCutoff, unusedCutoff := now.Add(-idle).UnixNano(), now.Add(-uninitIdle).UnixNano(), now.Add(-unusedIdle).UnixNano()
	type candidate struct {
		l      *live
		cutoff int64
	}
	stale := map[string]candidate{}
	v.sessMu.Lock()
	for id, l := range v.sessions {
		if l.busy.Load() != 0 {
			continue
		}
		switch seen := l.seen.Load(); {
		case l.ss.Load() == nil && seen < uninitCutoff:
			delete(v.sessions, id) // nothing else forgets it
			stale[id] = candidate{l, uninitCutoff}
		case !l.used.Load() && seen < unusedCutoff:
			stale[id] = candidate{l, unusedCutoff}
		case seen < cutoff:
			stale[id] = candidate{l, cutoff}
		}
	}
	v.sessMu.Unlock()
	if len(stale) == 0 {
		return
	}
	for ss := range v.srv.Sessions() {
		c, ok := stale[ss.ID()]
		if !ok || c.l.busy.Load() != 0 || c.l.seen.Load() >= c.cutoff {
			continue // a request came meanwhile
		}
		v.log.Info("closing an idle client session", "session", ss.ID(), "idle", idle)
		go ss.Close() // it waits for requests in flight; an initialized one is forgotten once it ends (track)
	}
}

// oldestUnused returns the view's session that has done no real work, born
// first and not already chosen, with its live state; nil if none.
func (v *view) oldestUnused() (*mcp.ServerSession, *live) {
	var (
		oldest *mcp.ServerSession
		ol     *live
	)
	for ss := range v.srv.Sessions() {
		l := v.live(ss.ID())
		if l == nil || l.used.Load() || l.evicted.Load() {
			continue
		}
		if ol == nil || l.born.Before(ol.born) {
			oldest, ol = ss, l
		}
	}
	return oldest, ol
}

// closeAll ends every session of the view (its server was removed).
func (v *view) closeAll() {
	for ss := range v.srv.Sessions() {
		go ss.Close()
	}
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
	return min != "" && protocol.LevelRank[level] >= protocol.LevelRank[min]
}

// enqueue queues a log message from server for the session, or drops it
// (counted) when the queue is full.
func (l *live) enqueue(m *metrics.Metrics, server string, p *mcp.LoggingMessageParams) {
	ss := l.ss.Load()
	if ss == nil {
		return
	}
	l.drainer.Do(func() { go l.drain(ss, m) })
	l.outMu.Lock()
	defer l.outMu.Unlock()
	if l.outEnded {
		return
	}
	select {
	case l.out <- notice{server, p}:
		m.NoticesQueued(1)
	default:
		m.NoticeDropped(server, "slow_client")
	}
}

// drain sends the queued messages until the session ends.
func (l *live) drain(ss *mcp.ServerSession, m *metrics.Metrics) {
	for {
		select {
		case n := <-l.out:
			m.NoticesQueued(-1)
			_ = ss.Log(context.Background(), n.p)
		case <-l.gone:
			l.outMu.Lock()
			l.outEnded = true
			l.outMu.Unlock()
			m.NoticesQueued(-len(l.out))
			return
		}
	}
}

// answer hands m (body) to the fast path, reporting whether it took it: the
// client's answer to a request Warden sent it on a fast call, or its
// cancellation of a fast call.
func (l *live) answer(m *rpc, body []byte) bool {
	switch {
	case m.Method == "" && bytes.HasPrefix(bytes.TrimLeft(m.ID, `"`), []byte(fastRequestPrefix)):
		var id string
		return json.Unmarshal(m.ID, &id) == nil && l.deliver(id, body)
	case m.Method == "notifications/cancelled":
		return l.cancel(string(m.Params.RequestID))
	}
	return false
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

// begin records a fast call in flight, unless one with its id already is.
// A call its client cancelled already is cancelled at once: nothing goes
// upstream.
func (l *live) begin(id string, cancel context.CancelFunc) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.calls[id]; dup {
		return false
	}
	l.calls[id] = cancel
	if at, ok := l.early[id]; ok {
		delete(l.early, id)
		if time.Since(at) < earlyFor {
			cancel()
		}
	}
	return true
}

func (l *live) end(id string) {
	l.mu.Lock()
	delete(l.calls, id)
	l.mu.Unlock()
}

// cancelAll ends the session's fast calls in flight (it was closed).
func (l *live) cancelAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.calls {
		c()
	}
}

// cancel ends a fast call the client cancelled, reporting whether there
// was one; a cancellation of none is kept a moment, for a call still on
// its way.
func (l *live) cancel(id string) bool {
	l.mu.Lock()
	c, ok := l.calls[id]
	if !ok {
		for k, at := range l.early {
			if time.Since(at) >= earlyFor {
				delete(l.early, k)
			}
		}
		if len(l.early) < maxEarly {
			l.early[id] = time.Now()
		}
	}
	l.mu.Unlock()
	if ok {
		c()
	}
	return ok
}
