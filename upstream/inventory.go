package upstream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/canon"
)

// lister takes a server's listing passes and hands each to the Peer: the
// first of every session (run), one after a list_changed notification, and
// one on demand (Refresh). It keeps the set of tools whose latest listing
// binds arguments to headers, for the tool calls.
type lister struct {
	name string
	ctx  context.Context
	cfg  *atomic.Pointer[config.Server] // the connection's: its callTimeout bounds a pass
	log  *slog.Logger
	peer Peer
	live func() *mcp.ClientSession // the live session, nil between sessions
	// headerBound names the tools whose latest listing binds arguments to
	// headers (x-mcp-header; see callTool).
	headerBound atomic.Pointer[boundTools]

	mu         sync.Mutex // taken before the connection's
	refreshing bool       // a loop of passes runs
	dirty      bool       // a list_changed came that no pass has taken yet
}

// changed re-lists the server after a list_changed notification.
// Notifications that arrive during a pass coalesce into one more pass; one
// that arrives while a connection takes its first listing (no session yet)
// is not lost: run resumes once the session is live.
func (l *lister) changed() {
	l.mu.Lock()
	l.dirty = true
	l.mu.Unlock()
	l.resume()
}

// resume starts the passes a list_changed asked for, unless passes run
// already (they take another) or no session is live.
func (l *lister) resume() {
	l.mu.Lock()
	cs := l.live()
	start := l.dirty && !l.refreshing && cs != nil
	if start {
		l.dirty, l.refreshing = false, true
	}
	l.mu.Unlock()
	if start {
		go l.loop(cs)
	}
}

// loop lists until no notification arrived during the last pass. The
// caller has set l.refreshing.
func (l *lister) loop(cs *mcp.ClientSession) {
	for {
		l.pass(cs)
		l.mu.Lock()
		live := l.live()
		if live != nil {
			cs = live // the connection may have been replaced meanwhile
		}
		// Without a session, dirty is left for run to resume.
		again := l.dirty && live != nil
		if again {
			l.dirty = false
		}
		l.refreshing = again
		l.mu.Unlock()
		if !again {
			return
		}
	}
}

// now lists the server again now, if a session is live.
func (l *lister) now() {
	if cs := l.live(); cs != nil {
		l.pass(cs)
	}
}

// inventorySeq numbers listing passes. It is process-wide, not per Conn: a
// reload that replaces a server's connection must not restart the numbering,
// or the approval registry (which keeps the last applied seq per server)
// would drop the new connection's passes as stale, rug pulls included.
var inventorySeq atomic.Uint64

// pass takes one complete listing and hands it to the Peer, keeping no
// copy: the Peer keeps the one inventory. The sequence number is taken
// before listing starts, so the Peer can tell a pass that started earlier
// but finished later.
func (l *lister) pass(cs *mcp.ClientSession) {
	seq := inventorySeq.Add(1)
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.Load().CallTimeout)
	defer cancel()
	inv := &Inventory{Seq: seq, Init: cs.InitializeResult()}
	caps := inv.Init.Capabilities
	var err error
	if caps != nil && caps.Tools != nil {
		tap := &listTap{}
		if inv.Tools, err = collect(cs.Tools(withListTap(ctx, tap), nil)); err != nil {
			l.log.Warn("listing tools failed", "err", redact(l.cfg.Load(), err))
			return // an incomplete inventory must never be applied
		}
		tap.apply(inv.Tools)
		bound := map[string]bool{}
		var scratch []byte
		for i, t := range inv.Tools {
			var held bool
			if inv.Tools[i], held = kept(t, &scratch); !held {
				if _, ok := t.InputSchema.(map[string]any); ok {
					bound[t.Name] = true // holdSchemas held it, but for its annotations
				}
			}
		}
		l.setHeaderBound(&boundTools{seq: seq, tools: bound})
	}
	if caps != nil && caps.Prompts != nil {
		if inv.Prompts, err = collect(cs.Prompts(ctx, nil)); err != nil {
			l.log.Warn("listing prompts failed", "err", redact(l.cfg.Load(), err))
		}
	}
	if caps != nil && caps.Resources != nil {
		if inv.Resources, err = collect(cs.Resources(ctx, nil)); err != nil {
			l.log.Warn("listing resources failed", "err", redact(l.cfg.Load(), err))
		}
		if inv.Templates, err = collect(cs.ResourceTemplates(ctx, nil)); err != nil {
			l.log.Warn("listing resource templates failed", "err", redact(l.cfg.Load(), err))
		}
	}
	inv.byName = make(map[string]*mcp.Tool, len(inv.Tools))
	for _, t := range inv.Tools {
		inv.byName[t.Name] = t
	}
	if l.peer != nil {
		l.peer.Inventory(l.name, inv)
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

// The SDK's client checks each listed tool's x-mcp-header annotations by
// encoding its input schema and decoding it again, with a fresh 32 KiB
// buffer: at start, with hundreds of tools, nearly a tenth of Warden's CPU.
// A schema it cannot encode it takes for one without annotations. So
// holdSchemas, on the answers to tools/list, hides in such a schema each
// one without annotations, for which the check finds nothing anyway, and
// a pass takes them out again (unheld); a schema with annotations goes
// through the SDK's check as it is.

// heldSchema is an input schema kept from the SDK client's check.
type heldSchema struct{ schema any }

var errHeld = errors.New("upstream: a held schema is not encoded")

func (heldSchema) MarshalJSON() ([]byte, error) { return nil, errHeld }

// holdSchemas is the sending middleware that holds the schemas of listed
// tools without x-mcp-header annotations.
func holdSchemas(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if list, ok := res.(*mcp.ListToolsResult); ok && list != nil {
			for _, t := range list.Tools {
				if t != nil {
					if m, ok := t.InputSchema.(map[string]any); ok && !annotated(m) {
						t.InputSchema = heldSchema{m}
					}
				}
			}
		}
		return res, err
	}
}

// boundTools names the tools whose listing in pass seq binds arguments to
// headers.
type boundTools struct {
	seq   uint64
	tools map[string]bool
}

// setHeaderBound keeps b unless a later pass's set is kept already: two
// passes may run at once (Refresh beside the loop), and the one
// that started first may finish last.
func (l *lister) setHeaderBound(b *boundTools) {
	for {
		old := l.headerBound.Load()
		if old != nil && old.seq > b.seq || l.headerBound.CompareAndSwap(old, b) {
			return
		}
	}
}

// bindsHeaders reports whether tool's latest listing binds arguments to
// headers.
func (l *lister) bindsHeaders(tool string) bool {
	bound := l.headerBound.Load()
	return bound != nil && bound.tools[tool]
}

// annotated reports whether schema has a property, at any depth of
// "properties", with an x-mcp-header key: where the SDK looks.
func annotated(schema map[string]any) bool {
	props, _ := schema["properties"].(map[string]any)
	for _, p := range props {
		if p, ok := p.(map[string]any); ok {
			if _, ok := p["x-mcp-header"]; ok || annotated(p) {
				return true
			}
		}
	}
	return false
}

// kept is the copy of t an inventory keeps, and whether holdSchemas held
// its input schema: the schema it was listed with, and both schemas as
// canon.Raw. An inventory lives as long as its listing is served, and a
// schema's decoded maps take several times the memory of its JSON (with
// 462 tools, 1.9 MB of the daemon's live heap of 9 MB); approval hashes a
// Raw as the value it encodes, so every pin stays the same, and the views
// serve it without encoding it again. A copy: the SDK's client may keep t
// for a later call (a 2026-07-28 session caches its listings) and read its
// schema then, finding no annotations in a held one either. scratch is a
// buffer to reuse.
func kept(t *mcp.Tool, scratch *[]byte) (*mcp.Tool, bool) {
	cp := *t
	h, held := t.InputSchema.(heldSchema)
	if held {
		cp.InputSchema = h.schema
	}
	cp.InputSchema = compact(cp.InputSchema, scratch)
	cp.OutputSchema = compact(cp.OutputSchema, scratch)
	return &cp, held
}

// compact is schema as canon.Raw, in a buffer of its own: scratch's
// spare room is not kept.
func compact(schema any, scratch *[]byte) any {
	if schema == nil {
		return nil
	}
	b, err := canon.Append((*scratch)[:0], schema)
	*scratch = b
	if err != nil {
		return schema // its hash fails the same way, and approval refuses the listing
	}
	return canon.Raw(bytes.Clone(b))
}
