package upstream

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resource subscriptions are shared: any number of downstream sessions may
// follow one upstream resource over one upstream subscription. It is made
// for the first follower, ended after the last one leaves, and made again on
// every new upstream session (a reconnect would otherwise end every
// follower's updates without a word). A subscription that could not be made
// again is tried anew when the next follower comes. The bookkeeping is
// c.subs (followers.go); the calls upstream are here.

// subscribe makes who (a downstream session, or anything comparable that
// stands for one) a follower of uri, subscribing upstream unless the live
// session already is.
func (f *followers) subscribe(ctx context.Context, uri string, who any) error {
	f.ops.Lock() // one change upstream at a time, in order
	defer f.ops.Unlock()
	err := f.do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		return f.subscribeOn(ctx, cs, uri)
	})
	if err != nil {
		return err
	}
	f.follow(uri, who)
	return nil
}

// unsubscribe ends who's following of uri, unsubscribing upstream after
// the last follower.
func (f *followers) unsubscribe(ctx context.Context, uri string, who any) error {
	f.ops.Lock()
	defer f.ops.Unlock()
	if !f.unfollow(uri, who) {
		return nil
	}
	return f.end(ctx, uri)
}

// end unsubscribes the live session from uri.
func (f *followers) end(ctx context.Context, uri string) error {
	return f.do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// leave ends every subscription of who (its session ended).
func (f *followers) leave(who any) {
	f.ops.Lock()
	defer f.ops.Unlock()
	for _, uri := range f.followedBy(who) {
		if f.unfollow(uri, who) {
			ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
			_ = f.end(ctx, uri)
			cancel()
		}
	}
}

// resubscribe subscribes a new upstream session to what is followed, off
// the path that makes the session available to calls; not while clients may
// not hear from the server (Expose does it then).
func (f *followers) resubscribe(cs *mcp.ClientSession) {
	f.ops.Lock()
	defer f.ops.Unlock()
	if !f.exposed() {
		return
	}
	for _, uri := range f.followed() {
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.Load().CallTimeout)
		if err := f.subscribeOn(ctx, cs, uri); err != nil {
			f.log.Warn("subscribing again after reconnecting failed; the next subscriber tries again", "uri", uri, "err", redact(f.cfg.Load(), err))
		}
		cancel()
	}
}
