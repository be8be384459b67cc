package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool's execution (the tasks extension's execution.taskSupport). The
// SDK's Tool has no field for it and drops it when it reads a tool list,
// so a listing pass reads it from the upstream's own answers: its context
// carries a listTap, which the stdio connection (boundedConn), the legacy
// SSE one (tappingConn) and the HTTP transport (sessionTransport) feed
// what the upstream answered to each tools/list. The pass then keeps each tool's execution in its _meta under
// MetaExecution: pinned and reviewed with the rest of the definition, and
// listed to clients as the tool's execution again (package surface).

// MetaExecution is the _meta key a listed tool's execution is kept under.
// An upstream's own value under it is dropped.
const MetaExecution = "warden/execution"

// maxTapped bounds the bytes of one answer a listTap reads; the tools of a
// larger one are listed without their execution.
const maxTapped = 16 << 20

// listTap collects the execution of the tools an upstream lists.
type listTap struct {
	mu   sync.Mutex
	exec map[string]json.RawMessage // by tool name
}

type listTapKey struct{}

// withListTap is ctx carrying t, for the requests made with it.
func withListTap(ctx context.Context, t *listTap) context.Context {
	return context.WithValue(ctx, listTapKey{}, t)
}

// listTapOf is the tap ctx carries, if any.
func listTapOf(ctx context.Context) *listTap {
	t, _ := ctx.Value(listTapKey{}).(*listTap)
	return t
}

// result reads a tools/list result.
func (t *listTap) result(res json.RawMessage) {
	var r struct {
		Tools []struct {
			Name      string          `json:"name"`
			Execution json.RawMessage `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(res, &r) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tool := range r.Tools {
		if len(tool.Execution) == 0 || string(tool.Execution) == "null" {
			continue
		}
		if t.exec == nil {
			t.exec = map[string]json.RawMessage{}
		}
		t.exec[tool.Name] = tool.Execution
	}
}

// message reads a JSON-RPC message the upstream sent: a response's result.
func (t *listTap) message(msg []byte) {
	var m struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(msg, &m) == nil && m.Result != nil {
		t.result(m.Result)
	}
}

// apply keeps in each tool's _meta the execution listed for it, and drops
// an upstream's own MetaExecution. A tool's _meta is copied before it
// changes.
func (t *listTap) apply(tools []*mcp.Tool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tool := range tools {
		ex, listed := t.exec[tool.Name]
		var v any
		if listed && json.Unmarshal(ex, &v) != nil {
			listed = false
		}
		if _, own := tool.Meta[MetaExecution]; !listed && !own {
			continue
		}
		meta := maps.Clone(tool.Meta)
		if meta == nil {
			meta = mcp.Meta{}
		}
		delete(meta, MetaExecution)
		if listed {
			meta[MetaExecution] = v
		}
		if len(meta) == 0 {
			meta = nil
		}
		tool.Meta = meta
	}
}

// tapIDs ties a stdio connection's tools/list requests, by id, to the taps
// their answers feed.
type tapIDs struct {
	mu   sync.Mutex
	taps map[jsonrpc.ID]*listTap
}

// sent notes a tools/list request written with ctx.
func (ids *tapIDs) sent(ctx context.Context, msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/list" || !req.IsCall() {
		return
	}
	if t := listTapOf(ctx); t != nil {
		ids.mu.Lock()
		if ids.taps == nil {
			ids.taps = map[jsonrpc.ID]*listTap{}
		}
		ids.taps[req.ID] = t
		ids.mu.Unlock()
	}
}

// received feeds a response to the tap of its request.
func (ids *tapIDs) received(msg jsonrpc.Message) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	ids.mu.Lock()
	t := ids.taps[resp.ID]
	delete(ids.taps, resp.ID)
	ids.mu.Unlock()
	if t != nil && resp.Result != nil {
		t.result(resp.Result)
	}
}

// tappingTransport is a legacy SSE server's transport, whose connection
// feeds the listing passes' taps, as a stdio server's does (boundedConn).
type tappingTransport struct{ mcp.Transport }

func (t tappingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return tappingConn{conn, &tapIDs{}}, nil
}

// tappingConn feeds the listing passes' taps what goes over conn.
type tappingConn struct {
	mcp.Connection
	taps *tapIDs
}

func (c tappingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.taps.sent(ctx, msg) // before: the answer can come before Write returns
	return c.Connection.Write(ctx, msg)
}

func (c tappingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.taps.received(msg)
	}
	return msg, err
}

// tapBody is the body of an HTTP answer to tools/list, feeding its tap as
// it is read: each event of an event stream once read whole (before the
// SDK, reading the same bytes, can act on it), a JSON body at its end.
type tapBody struct {
	io.ReadCloser
	tap  *listTap
	sse  bool
	buf  []byte // read, not yet fed (for a stream: from a line's start)
	data []byte // an event's data so far
	off  bool   // too large: no longer read
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.off {
		return n, err
	}
	if len(b.buf)+n > maxTapped {
		b.off, b.buf, b.data = true, nil, nil
		return n, err
	}
	b.buf = append(b.buf, p[:n]...)
	if !b.sse {
		if err == io.EOF {
			b.tap.message(b.buf)
			b.buf = nil
		}
		return n, err
	}
	for {
		i := bytes.IndexByte(b.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(b.buf[:i], []byte("\r"))
		b.buf = b.buf[i+1:]
		switch {
		case len(line) == 0: // the event ends
			if b.data != nil {
				b.tap.message(b.data)
				b.data = nil
			}
		case bytes.HasPrefix(line, []byte("data:")):
			d := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if b.data != nil {
				b.data = append(b.data, '\n')
			} else {
				b.data = []byte{}
			}
			b.data = append(b.data, d...)
		}
	}
	return n, err
}
