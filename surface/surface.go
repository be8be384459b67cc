package surface

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/protocol"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/tasks"
)

// Surfaces holds the aggregated view and one view per server, and serves them
// under /mcp and /mcp/{server}.
type Surfaces struct {
	g           *gateway.Gateway
	log         *slog.Logger
	version     string
	maxSessions int
	idle        time.Duration
	refusedAt   atomic.Int64 // when a refused session was last logged (Unix ns)
	evictedAt   atomic.Int64 // when an evicted session was last logged (Unix ns)
	agg         *view
	aggH        endpoint
	search      *view // /mcp?view=search
	searchH     endpoint
	searchOnce  sync.Once   // the search view is kept up to date from its first use
	searchOn    atomic.Bool // on: after that
	toolSearch  atomic.Pointer[ToolSearch]
	noFast      atomic.Bool                    // every request to the SDK server (DisableFastPath)
	stdio       func(*http.Request) bool       // SetStdio's, set before serving
	st          store.Store                    // ShareSessions's shared store, set before serving; nil: sessions stay here
	unwatch     []func()                       // ShareSessions's watches of st, stopped by Close
	policy      atomic.Pointer[callers.Policy] // SetCallers's (callers.go); nil: none
	tasks       *taskRunner                    // SetTasks's, set before serving; nil: no tasks

	mu    sync.Mutex
	views map[string]*view
	hs    map[string]endpoint

	dirtyMu sync.Mutex
	dirty   map[string]bool // servers to re-read
	wake    chan struct{}
	done    chan struct{}
	listed  listed // the gateway version each server's lists reflect
}

// New builds the surfaces and registers them with the gateway.
//
// A client session with no request in progress for sessionIdle is closed
// (0 means DefaultSessionIdle), one that has done no real work after
// unusedIdle; beyond maxSessions client sessions at once (0 means
// DefaultMaxSessions) a new one takes the place of an unused one, or is
// refused.
func New(g *gateway.Gateway, log *slog.Logger, version string, sessionIdle time.Duration, maxSessions int) *Surfaces {
	if sessionIdle <= 0 {
		sessionIdle = DefaultSessionIdle
	}
	if maxSessions <= 0 {
		maxSessions = DefaultMaxSessions
	}
	s := &Surfaces{g: g, log: log, version: version, maxSessions: maxSessions, idle: sessionIdle, views: map[string]*view{}, hs: map[string]endpoint{},
		dirty: map[string]bool{}, wake: make(chan struct{}, 1), done: make(chan struct{}), listed: newListed()}
	s.agg = newView(g, "", log, version)
	s.agg.policy = &s.policy
	s.aggH = newEndpoint(s.agg.srv)
	s.search = newSearchView(g, log, version)
	s.search.policy = &s.policy
	s.search.toolSearch = &s.toolSearch
	s.searchH = newEndpoint(s.search.srv)
	s.toolSearch.Store(&ToolSearch{Mode: config.ToolSearchOff})
	go s.update()
	go s.closeIdle(sessionIdle)
	g.AddView(s)
	for _, server := range g.Servers() {
		s.Changed(server) // listed before these surfaces were there
	}
	return s
}

// DefaultSessionIdle is how long a client session may go without a request
// in progress (an open event stream is one) before Warden closes it.
const DefaultSessionIdle = time.Hour

// DefaultMaxSessions bounds the client sessions open at once over all
// endpoints: each holds goroutines and memory until it ends or idles out.
// Over it a new session takes the place of one that has done no real work
// (evictUnused), else it is refused: no client can push out a session that
// has been used.
const DefaultMaxSessions = 1000

// allViews returns the aggregated view and each server's.
func (s *Surfaces) allViews() []*view {
	s.mu.Lock()
	defer s.mu.Unlock()
	views := []*view{s.agg, s.search}
	for _, v := range s.views {
		views = append(views, v)
	}
	return views
}

// sessionCount counts the client sessions over all endpoints: those the
// SDK holds (a request the SDK names a session for and ends at once, such as
// a probe for a newer protocol, is none).
func (s *Surfaces) sessionCount() int {
	n := 0
	for _, v := range s.allViews() {
		for range v.srv.Sessions() {
			n++
		}
	}
	return n
}

// refuseSession answers a request that would start a session (a POST
// without one) when the sessions are at their limit and none can make
// room (evictUnused). Requests racing in at once can each pass: the limit
// is exact to within those in flight.
func (s *Surfaces) refuseSession(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" || s.sessionCount() < s.maxSessions || s.evictUnused() {
		return false
	}
	msg := fmt.Sprintf("Warden has %d client sessions open, its limit, and each has been used: no new session now. Close sessions that are no longer used (a session without a request for %s is closed by itself), then retry.", s.maxSessions, s.idle)
	w.Header().Set("Retry-After", "10")
	Refuse(w, r, http.StatusServiceUnavailable, msg)
	if now, last := time.Now().UnixNano(), s.refusedAt.Load(); now-last > int64(time.Minute) && s.refusedAt.CompareAndSwap(last, now) {
		s.log.Warn("client sessions refused: at the session limit (logged once a minute)", "limit", s.maxSessions)
	}
	return true
}

// evictUnused closes, to make room for a new session, the session born
// first of those that have done no real work, and reports whether there
// was one. Every local process shares 127.0.0.1, so no peer can be told
// from another; what sets a session apart is whether it has been used. So
// a flood of sessions that only initialize pushes out only its own kind,
// and a session that has done work is never pushed out.
func (s *Surfaces) evictUnused() bool {
	for {
		var (
			victim *mcp.ServerSession
			vl     *live
		)
		for _, v := range s.allViews() {
			if ss, l := v.oldestUnused(); l != nil && (vl == nil || l.born.Before(vl.born)) {
				victim, vl = ss, l
			}
		}
		if vl == nil {
			return false
		}
		if vl.evicted.CompareAndSwap(false, true) { // else another new session took it: look again
			if now, last := time.Now().UnixNano(), s.evictedAt.Load(); now-last > int64(time.Minute) && s.evictedAt.CompareAndSwap(last, now) {
				s.log.Warn("at the session limit: closing sessions that have done no work, born first, to make room for new ones (logged once a minute)", "session", victim.ID(), "limit", s.maxSessions)
			}
			go victim.Close()
			return true
		}
	}
}

// unusedIdle is how long a session that has done no real work may idle
// (sessionIdle if that is shorter).
const unusedIdle = time.Minute

// closeIdle closes idle client sessions until Close.
func (s *Surfaces) closeIdle(idle time.Duration) {
	t := time.NewTicker(max(min(idle/4, time.Minute), 10*time.Millisecond))
	defer t.Stop()
	swept := time.Now()
	for {
		select {
		case <-t.C:
		case <-s.done:
			return
		}
		for _, v := range s.allViews() {
			v.closeIdle(idle, min(idle, 30*time.Second), min(idle, unusedIdle))
		}
		if s.st != nil && time.Since(swept) > touchEvery {
			s.sweepSessions(time.Now(), idle)
			swept = time.Now()
		}
	}
}

// maxBody bounds a request body.
const maxBody = 4 << 20

// DisableFastPath sends every request to the SDK server, none to the fast
// path (surface/fast.go): WARDEN_FASTPATH=off, for diagnosis and the
// differential test.
func (s *Surfaces) DisableFastPath() { s.noFast.Store(true) }

// serve offers a POST on an established session to the fast path first
// (unless it is off); a request of the stateless era goes to the stateless
// handler.
func (s *Surfaces) serve(v *view, h endpoint, stateless bool, w http.ResponseWriter, r *http.Request) {
	if stateless {
		if r.Method == http.MethodPost && taskNameMismatch(w, r) {
			return
		}
		// Of known length: a body too large is the SDK's to refuse.
		if r.Method == http.MethodPost && !s.noFast.Load() && r.ContentLength >= 0 && r.ContentLength <= maxBody && statelessHeaders(r) &&
			offerFast(w, r, func(body []byte) bool { return v.serveStatelessFast(w, r, body) }) {
			return
		}
		toSDK(h.stateless, w, r)
		return
	}
	id := r.Header.Get("Mcp-Session-Id")
	l := v.live(id)
	if l == nil && id != "" && s.st != nil {
		l = v.adopt(s.st, id)
	}
	if l != nil {
		if !v.ownedBy(l, r.Header) {
			Refuse(w, r, http.StatusForbidden, "this session was begun by another caller; begin a session of your own (without Mcp-Session-Id)")
			return
		}
		l.enter()
		defer l.leave()
		if l.adopted != nil { // the SDK's handler does not hold it
			h.sessions = l.adopted
		}
	}
	if l != nil && s.st != nil { // shared through the store (shared.go)
		v.touchSession(s.st, l, id)
		switch r.Method {
		case http.MethodDelete:
			v.endShared(s.st, id)
			if l.adopted != nil {
				if ss := l.ss.Load(); ss != nil {
					ss.Close()
				}
				w.WriteHeader(http.StatusNoContent)
				return
			}
		case http.MethodPost:
			if body, err := readBody(r); err == nil {
				r.Body = io.NopCloser(bytes.NewReader(body))
				if relayable(body) {
					v.relay(s.st, id, body)
				}
			}
		}
	}
	if r.Method == http.MethodPost && l != nil && l.ss.Load() != nil && !s.noFast.Load() && sessionHeaders(r) && // initialized
		offerFast(w, r, func(body []byte) bool { return v.serveFast(w, r, l, body) }) {
		return
	}
	toSDK(h.sessions, w, r)
}

// offerFast reads a POST's body and offers it to fast, a fast path,
// reporting whether the request is answered: by fast, or refused for its
// body. Otherwise the body is put back for the SDK.
func offerFast(w http.ResponseWriter, r *http.Request, fast func(body []byte) bool) bool {
	body, err := readBody(r)
	if err != nil {
		refuse(w, http.StatusBadRequest, body, "reading the request: "+err.Error())
		return true
	}
	if len(body) > maxBody {
		refuse(w, http.StatusRequestEntityTooLarge, body, tooLarge)
		return true
	}
	if fast(body) {
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return false
}

// fastHeaders reports whether a POST's headers are what the SDK's handler
// accepts without a word (Content-Type, Accept, no Last-Event-ID; the
// protocol version is each era's to check); others go to it, for its
// answer.
func fastHeaders(r *http.Request) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	var jsonOK, sseOK bool
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(mt)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK && sseOK && len(r.Header.Values("Last-Event-ID")) == 0
}

// sessionHeaders reports whether a POST on a session has fastHeaders and a
// protocol version of the session era, if it names one.
func sessionHeaders(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return (v == "" || slices.Contains(sessionVersions, v)) && fastHeaders(r)
}

// statelessHeaders reports whether a stateless-era POST has fastHeaders and
// is a tools/call of the revision the fast path serves.
func statelessHeaders(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") == protocol.StatelessSince && r.Header.Get("Mcp-Method") == "tools/call" && fastHeaders(r)
}

// readBody reads a request body of at most maxBody+1 bytes; a small one of
// known length in one piece.
func readBody(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= 64<<10 {
		body := make([]byte, n)
		_, err := io.ReadFull(r.Body, body)
		return body, err
	}
	return io.ReadAll(io.LimitReader(r.Body, maxBody+1))
}

// view returns server's own view, built on first use: each is an SDK server
// holding its own copy of the server's lists, and most servers' own
// endpoints are never used.
func (s *Surfaces) view(server string) (*view, endpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.views[server]
	if !ok {
		v = newView(s.g, server, s.log, s.version)
		v.st, v.policy, v.tasks = s.st, &s.policy, s.tasks
		// Filled before anyone can find it: update rebuilds only the
		// views it finds, so a change after this one reaches it there.
		v.Changed(server)
		s.views[server] = v
		s.hs[server] = newEndpoint(v.srv)
	}
	return v, s.hs[server]
}

// built returns server's own view if it has one.
func (s *Surfaces) built(server string) *view {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.views[server]
}

func (s *Surfaces) forget(server string) {
	s.mu.Lock()
	v := s.views[server]
	delete(s.views, server)
	delete(s.hs, server)
	s.mu.Unlock()
	if v != nil {
		v.closeAll()
		close(v.gone)
	}
}

// Server returns the SDK server behind an endpoint: "" for /mcp.
func (s *Surfaces) Server(server string) *mcp.Server {
	if server == "" {
		return s.agg.srv
	}
	v, _ := s.view(server)
	return v.srv
}

// ServeHTTP serves /mcp and /mcp/{server}.
func (s *Surfaces) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.markStdio(r)
	if !s.authenticate(w, r) {
		return
	}
	stateless := statelessRequest(r)
	if !stateless && s.refuseSession(w, r) {
		return
	}
	rest, _ := strings.CutPrefix(r.URL.Path, "/mcp")
	server := strings.Trim(rest, "/")
	if server == "" {
		v, h, err := s.aggregated(r)
		if err != "" {
			Refuse(w, r, http.StatusBadRequest, err)
			return
		}
		s.serve(v, h, stateless, w, r)
		return
	}
	if _, ok := s.g.LiveConfig(server); !ok {
		msg := "no server named " + server + " is configured; see: warden servers list"
		if s.g.Disabled(server) {
			msg = "server " + server + " is disabled; to use it, " + gateway.DisabledHelp
		}
		Refuse(w, r, http.StatusNotFound, msg)
		return
	}
	v, h := s.view(server)
	s.serve(v, h, stateless, w, r)
}

// SetTasks serves the tasks extension with the task records in ts (see
// tasks.go); call it before serving.
func (s *Surfaces) SetTasks(ts *tasks.Tasks) {
	s.tasks = newTaskRunner(ts, s.g, s.log)
	s.agg.tasks, s.search.tasks = s.tasks, s.tasks
}

// ToolSearch is which view /mcp shows without ?view= (config toolSearch).
type ToolSearch struct {
	Mode   string // config.ToolSearchOff, On or Auto
	Budget int    // tokens, for Auto
	// Rerank is how search_tools orders what it found: config.RerankNone
	// or RerankSampling (rerank.go).
	Rerank string
}

// SetToolSearch sets /mcp's default view for sessions started from now
// on, and how search_tools orders from its next search.
func (s *Surfaces) SetToolSearch(ts ToolSearch) { s.toolSearch.Store(&ts) }

// aggregated picks the view of a request to /mcp: the one ?view= names,
// else the one its session began on, else the configured default.
func (s *Surfaces) aggregated(r *http.Request) (*view, endpoint, string) {
	switch name := r.URL.Query().Get("view"); name {
	case "search":
		return s.useSearch()
	case "all":
		return s.agg, s.aggH, ""
	case "":
	default:
		return nil, endpoint{}, fmt.Sprintf("no view named %q; use /mcp?view=search (search_tools and call_tool) or /mcp?view=all (every tool)", name)
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		if s.search.live(id) != nil || s.agg.live(id) == nil && s.st != nil && s.search.recorded(id) {
			return s.useSearch()
		}
		return s.agg, s.aggH, ""
	}
	ts := s.toolSearch.Load()
	if ts.Mode == config.ToolSearchOn || ts.Mode == config.ToolSearchAuto && s.agg.tokens() > ts.Budget {
		return s.useSearch()
	}
	return s.agg, s.aggH, ""
}

// useSearch returns the search view, first building its index: until a
// client uses it, keeping it up to date would only cost every list rebuild.
// The first request waits for the index, so its first search finds what
// is there.
func (s *Surfaces) useSearch() (*view, endpoint, string) {
	s.searchOnce.Do(func() {
		s.searchOn.Store(true) // from now on, update keeps it current
		for _, server := range s.g.Servers() {
			s.search.Changed(server)
		}
	})
	return s.search, s.searchH, ""
}

// The gateway.View side: fan out to the aggregated view and the server's own
// (Changed: listed.go).

// Log and ResourceUpdated go to the server's own view only if it was built:
// without it, the server's endpoint has no sessions.
func (s *Surfaces) Log(server string, p *mcp.LoggingMessageParams) {
	s.agg.Log(server, p)
	s.search.Log(server, p)
	if v := s.built(server); v != nil {
		v.Log(server, p)
	}
}

func (s *Surfaces) ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams) {
	s.agg.ResourceUpdated(server, p)
	s.search.ResourceUpdated(server, p)
	if v := s.built(server); v != nil {
		v.ResourceUpdated(server, p)
	}
}
