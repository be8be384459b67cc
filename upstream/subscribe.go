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
// again is tried anew when the next follower comes.

// Subscribe makes who (a downstream session, or anything comparable that
// stands for one) a follower of uri, subscribing upstream unless the live
// session already is.
func (c *Conn) Subscribe(ctx context.Context, uri string, who any) error {
	c.subOps.Lock() // one change upstream at a time, in order
	defer c.subOps.Unlock()
	err := c.Do(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		return c.subscribeOn(ctx, cs, uri)
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.subs[uri] == nil {
		c.subs[uri] = map[any]bool{}
	}
	c.subs[uri][who] = true
	c.mu.Unlock()
	return nil
}

// subscribeOn subscribes cs to uri unless it already is.
func (c *Conn) subscribeOn(ctx context.Context, cs *mcp.ClientSession, uri string) error {
	c.mu.Lock()
	done := c.subbed[uri] == cs
	c.mu.Unlock()
	if done {
		return nil
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		return err
	}
	c.mu.Lock()
	c.subbed[uri] = cs
	c.mu.Unlock()
	return nil
}

// Unsubscribe ends who's following of uri, unsubscribing upstream after the
// last follower.
func (c *Conn) Unsubscribe(ctx context.Context, uri string, who any) error {
	c.subOps.Lock()
	defer c.subOps.Unlock()
	if !c.unfollow(uri, who) {
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
	c.subOps.Lock()
	defer c.subOps.Unlock()
	c.mu.Lock()
	var uris []string
	for uri, f := range c.subs {
		if f[who] {
			uris = append(uris, uri)
		}
	}
	c.mu.Unlock()
	for _, uri := range uris {
		if c.unfollow(uri, who) {
			ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
			_ = c.unsubscribe(ctx, uri)
			cancel()
		}
	}
}

// unfollow drops who from uri's followers, reporting whether it was the
// last one.
func (c *Conn) unfollow(uri string, who any) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.subs[uri]
	if !f[who] {
		return false
	}
	delete(f, who)
	if len(f) > 0 {
		return false
	}
	delete(c.subs, uri)
	delete(c.subbed, uri)
	return true
}

// Adopt takes over the followers of the connection c replaces (a changed
// config), so that their subscriptions carry on upstream.
func (c *Conn) Adopt(old *Conn) {
	old.mu.Lock()
	subs := old.subs
	old.subs = map[string]map[any]bool{}
	old.mu.Unlock()
	c.mu.Lock()
	for uri, f := range subs {
		if c.subs[uri] == nil {
			c.subs[uri] = map[any]bool{}
		}
		for who := range f {
			c.subs[uri][who] = true
		}
	}
	cs := c.session
	c.mu.Unlock()
	if cs != nil { // connected already: its first resubscribe may have missed them
		go c.resubscribe(cs)
	}
}

// resubscribe subscribes a new upstream session to what is followed, off
// the path that makes the session available to calls; not while clients may
// not hear from the server (Expose does it then).
func (c *Conn) resubscribe(cs *mcp.ClientSession) {
	c.subOps.Lock()
	defer c.subOps.Unlock()
	if !c.exposed() {
		return
	}
	c.mu.Lock()
	uris := make([]string, 0, len(c.subs))
	for uri := range c.subs {
		uris = append(uris, uri)
	}
	c.mu.Unlock()
	for _, uri := range uris {
		ctx, cancel := context.WithTimeout(c.ctx, c.Config().CallTimeout)
		if err := c.subscribeOn(ctx, cs, uri); err != nil {
			c.log.Warn("subscribing again after reconnecting failed; the next subscriber tries again", "uri", uri, "err", c.redact(err))
		}
		cancel()
	}
}
