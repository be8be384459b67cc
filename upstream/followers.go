package upstream

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
)

// followers are the resource subscriptions that downstream sessions share
// over one upstream connection: the bookkeeping (who follows which URI, and
// which upstream session is subscribed to it) here, the calls upstream in
// subscribe.go; ops orders them, one change at a time. The zero value
// follows nothing; the calls need the dependencies below.
type followers struct {
	ctx     context.Context                // the connection's
	cfg     *atomic.Pointer[config.Server] // the connection's: its callTimeout
	log     *slog.Logger
	exposed func() bool // whether clients may hear from the server
	// do runs fn on the live session, as Conn.Do.
	do func(ctx context.Context, fn func(context.Context, *mcp.ClientSession) error) error

	ops sync.Mutex // held across a change upstream, taken before mu

	mu     sync.Mutex
	subs   map[string]map[any]bool       // resource URI → its downstream followers
	subbed map[string]*mcp.ClientSession // resource URI → the session subscribed to it
}

// follow makes who a follower of uri.
func (f *followers) follow(uri string, who any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[string]map[any]bool{}
	}
	if f.subs[uri] == nil {
		f.subs[uri] = map[any]bool{}
	}
	f.subs[uri][who] = true
}

// unfollow drops who from uri's followers, reporting whether it was the
// last one; then uri is no longer subscribed on any session.
func (f *followers) unfollow(uri string, who any) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.subs[uri]
	if !w[who] {
		return false
	}
	delete(w, who)
	if len(w) > 0 {
		return false
	}
	delete(f.subs, uri)
	delete(f.subbed, uri)
	return true
}

// followedBy is the URIs who follows.
func (f *followers) followedBy(who any) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var uris []string
	for uri, w := range f.subs {
		if w[who] {
			uris = append(uris, uri)
		}
	}
	return uris
}

// followed is the URIs anyone follows.
func (f *followers) followed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	uris := make([]string, 0, len(f.subs))
	for uri := range f.subs {
		uris = append(uris, uri)
	}
	return uris
}

// adopt takes over old's followers, leaving old with none. Which session
// is subscribed is not carried over: old's sessions are not this one's.
func (f *followers) adopt(old *followers) {
	old.mu.Lock()
	subs := old.subs
	old.subs = nil
	old.mu.Unlock()
	for uri, w := range subs {
		for who := range w {
			f.follow(uri, who)
		}
	}
}

// subscribeOn subscribes cs to uri unless it already is.
func (f *followers) subscribeOn(ctx context.Context, cs *mcp.ClientSession, uri string) error {
	f.mu.Lock()
	done := f.subbed[uri] == cs
	f.mu.Unlock()
	if done {
		return nil
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return err
	}
	f.mu.Lock()
	if f.subbed == nil {
		f.subbed = map[string]*mcp.ClientSession{}
	}
	f.subbed[uri] = cs
	f.mu.Unlock()
	return nil
}
