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
	return boundedConn{tappingConn{markingConn{conn}, &tapIDs{}}, t.gate, &answerIDs{holds: map[jsonrpc.ID]*answerHold{}}}, nil
}

type markingConn struct{ mcp.Connection }

func (c markingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if err == nil {
		markSent(ctx)
	}
	return err
}

// boundedConn is a stdio connection: marking dispatch, feeding the listing
// passes' taps (tappingConn, execution.go), pacing notices and bounding
// answers.
type boundedConn struct {
	tappingConn
	gate *noticeGate
	ids  *answerIDs
}

func (c boundedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.ids.sent(ctx, msg) // before: the answer can come before Write returns
	return c.tappingConn.Write(ctx, msg)
}

func (c boundedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.tappingConn.Read(ctx)
		if r, ok := msg.(*jsonrpc.Request); err == nil && ok && !r.IsCall() && isNotice(r.Method) {
			if err := c.gate.pace(ctx); err != nil {
				return nil, err
			}
			if !c.gate.allow() {
				continue
			}
		}
		if err == nil {
			msg = c.ids.received(ctx, msg)
		}
		return msg, err
	}
}
