package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// markingTransport wraps a transport so that a successful write of a request
// marks its call as dispatched (see Dispatch).
type markingTransport struct{ mcp.Transport }

func (t markingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return markingConn{conn}, nil
}

type markingConn struct{ mcp.Connection }

func (c markingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if err == nil {
		markSent(ctx)
	}
	return err
}
