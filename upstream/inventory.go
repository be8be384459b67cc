package upstream

import (
	"context"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scheduleRefresh re-lists the server after a list_changed notification.
// Notifications that arrive during a pass coalesce into one more pass; one
// that arrives while a connection takes its first listing (no session yet)
// is not lost: run starts the pass once the session is ready.
func (c *Conn) scheduleRefresh() {
	c.mu.Lock()
	cs := c.session
	if c.refreshing || cs == nil {
		c.dirty = true
		c.mu.Unlock()
		return
	}
	c.refreshing = true
	c.mu.Unlock()
	go c.refreshLoop(cs)
}

// refreshLoop lists until no notification arrived during the last pass.
// The caller has set c.refreshing.
func (c *Conn) refreshLoop(cs *mcp.ClientSession) {
	for {
		c.refresh(cs)
		c.mu.Lock()
		if c.session != nil {
			cs = c.session // the connection may have been replaced meanwhile
		}
		// Without a session, dirty is left for run to pick up.
		again := c.dirty && c.session != nil
		if again {
			c.dirty = false
		}
		c.refreshing = again
		c.mu.Unlock()
		if !again {
			return
		}
	}
}

// Refresh lists the server again now.
func (c *Conn) Refresh() {
	if cs := c.live(); cs != nil {
		c.refresh(cs)
	}
}

// inventorySeq numbers listing passes. It is process-wide, not per Conn: a
// reload that replaces a server's connection must not restart the numbering,
// or the approval registry (which keeps the last applied seq per server)
// would drop the new connection's passes as stale, rug pulls included.
var inventorySeq atomic.Uint64

// refresh takes one complete listing and hands it to the Peer, keeping no
// copy: the Peer keeps the one inventory. The sequence number is taken
// before listing starts, so the Peer can tell a pass that started earlier
// but finished later.
func (c *Conn) refresh(cs *mcp.ClientSession) {
	seq := inventorySeq.Add(1)
	ctx, cancel := context.WithTimeout(c.ctx, c.Config().CallTimeout)
	defer cancel()
	inv := &Inventory{Seq: seq, Init: cs.InitializeResult()}
	caps := inv.Init.Capabilities
	var err error
	if caps != nil && caps.Tools != nil {
		if inv.Tools, err = collect(cs.Tools(ctx, nil)); err != nil {
			c.log.Warn("listing tools failed", "err", c.redact(err))
			return // an incomplete inventory must never be applied
		}
	}
	if caps != nil && caps.Prompts != nil {
		if inv.Prompts, err = collect(cs.Prompts(ctx, nil)); err != nil {
			c.log.Warn("listing prompts failed", "err", c.redact(err))
		}
	}
	if caps != nil && caps.Resources != nil {
		if inv.Resources, err = collect(cs.Resources(ctx, nil)); err != nil {
			c.log.Warn("listing resources failed", "err", c.redact(err))
		}
		if inv.Templates, err = collect(cs.ResourceTemplates(ctx, nil)); err != nil {
			c.log.Warn("listing resource templates failed", "err", c.redact(err))
		}
	}
	inv.byName = make(map[string]*mcp.Tool, len(inv.Tools))
	for _, t := range inv.Tools {
		inv.byName[t.Name] = t
	}
	if c.opts.Peer != nil {
		c.opts.Peer.Inventory(c.Name, inv)
	}
}

func collect[T any](seq func(func(*T, error) bool)) ([]*T, error) {
	var out []*T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
