package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// markingTransport wraps a transport so that a successful write of a request
// marks its call as dispatched (see Dispatch), and a notification above
// the gate's rate is dropped as it is read.
type markingTransport struct {
	mcp.Transport
	gate *noticeGate
}

func (t markingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return gatedConn{markingConn{conn}, t.gate}, nil
}

type markingConn struct{ mcp.Connection }

func (c markingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if err == nil {
		markSent(ctx)
	}
	return err
}
