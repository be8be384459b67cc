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

// Subscribe makes who (a downstream session, or anything comparable that
// stands for one) a follower of uri, subscribing upstream unless the live
// session already is.
func (c *Conn) Subscribe(ctx context.Context, uri string, who any) error {
	c.subs.ops.Lock() // one change upstream at a time, in order
	defer c.subs.ops.Unlock()
	err := c.Do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		return c.subs.subscribeOn(ctx, cs, uri)
	})
	if err != nil {
		return err
	}
	c.subs.follow(uri, who)
	return nil
}

// Unsubscribe ends who's following of uri, unsubscribing upstream after the
// last follower.
func (c *Conn) Unsubscribe(ctx context.Context, uri string, who any) error {
	c.subs.ops.Lock()
	defer c.subs.ops.Unlock()
	if !c.subs.unfollow(uri, who) {
		return nil
	}
	return c.unsubscribe(ctx, uri)
}

func (c *Conn) unsubscribe(ctx context.Context, uri string) error {
	return c.Do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// Unfollow ends every subscription of who (its session ended).
func (c *Conn) Unfollow(who any) {
	c.subs.ops.Lock()
	defer c.subs.ops.Unlock()
	for _, uri := range c.subs.followedBy(who) {
		if c.subs.unfollow(uri, who) {
			ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
			_ = c.unsubscribe(ctx, uri)
			cancel()
		}
	}
}

// Adopt takes over the followers of the connection c replaces (a changed
// config), so that their subscriptions carry on upstream.
func (c *Conn) Adopt(old *Conn) {
	c.subs.adopt(old.subs)
	if cs := c.live(); cs != nil { // connected already: its first resubscribe may have missed them
		go c.resubscribe(cs)
	}
}

// resubscribe subscribes a new upstream session to what is followed, off
// the path that makes the session available to calls; not while clients may
// not hear from the server (Expose does it then).
func (c *Conn) resubscribe(cs *mcp.ClientSession) {
	c.subs.ops.Lock()
	defer c.subs.ops.Unlock()
	if !c.exposed() {
		return
	}
	for _, uri := range c.subs.followed() {
		ctx, cancel := context.WithTimeout(c.ctx, c.Config().CallTimeout)
		if err := c.subs.subscribeOn(ctx, cs, uri); err != nil {
			c.log.Warn("subscribing again after reconnecting failed; the next subscriber tries again", "uri", uri, "err", redact(c.Config(), err))
		}
		cancel()
	}
}
