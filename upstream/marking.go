package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// markingTransport wraps a stdio server's transport so that a successful
// write of a request marks its call as dispatched (see Dispatch), a
// notification above the gate's rate is dropped as it is read (and a flood
// is read no faster than noticeReadRate), and a large
// answer takes room in the answers' bound (see Answers), and a listing
// pass reads the tools' execution (execution.go).
type markingTransport struct {
	mcp.Transport
	gate *noticeGate
}

func (t markingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return boundedConn{markingConn{conn}, t.gate, &answerIDs{holds: map[jsonrpc.ID]*answerHold{}}, &tapIDs{}}, nil
}

type markingConn struct{ mcp.Connection }

func (c markingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if err == nil {
		markSent(ctx)
	}
	return err
}

type boundedConn struct {
	markingConn
	gate *noticeGate
	ids  *answerIDs
	taps *tapIDs // tools/list answers a listing pass reads (execution.go)
}

func (c boundedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.ids.sent(ctx, msg) // before: the answer can come before Write returns
	c.taps.sent(ctx, msg)
	return c.markingConn.Write(ctx, msg)
}

func (c boundedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.markingConn.Read(ctx)
		if r, ok := msg.(*jsonrpc.Request); err == nil && ok && !r.IsCall() && isNotice(r.Method) {
			if err := c.gate.pace(ctx); err != nil {
				return nil, err
			}
			if !c.gate.allow() {
				continue
			}
		}
		if err == nil {
			c.taps.received(msg)
			msg = c.ids.received(ctx, msg)
		}
		return msg, err
	}
}
