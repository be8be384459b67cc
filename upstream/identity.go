package upstream

import (
	"bytes"
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
)

// An upstream that speaks 2026-07-28 names itself in every result's _meta
// (io.modelcontextprotocol/serverInfo). That names the server at the far
// end of Warden's own hop; to Warden's clients the server that answers is
// Warden, which names itself (see the surfaces). So the upstream's name is
// taken out of the results Warden passes on as they come in, as the
// surfaces take the client's hop out of requests going up.

// forwarded are the methods whose results Warden passes on to its clients.
var forwarded = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true}

// withoutServerInfo is the sending middleware that takes the upstream's
// name out of the results passed on.
func withoutServerInfo(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil && res != nil && forwarded[method] {
			delete(res.GetMeta(), mcp.MetaKeyServerInfo)
		}
		return res, err
	}
}

// cutServerInfo cuts the upstream's name out of a tool result as the
// upstream sent it (raw, valid JSON), from every member that encoding/json
// would take for _meta (any case, any escapes). It writes over raw, which
// its caller leaves to it: each _meta is written again no longer than it
// was, and the rest is moved up, so a large answer is not held twice.
func cutServerInfo(raw []byte) []byte {
	type cut struct {
		at, end int    // raw[at:end] is replaced
		with    []byte // by this
	}
	var cuts []cut
	answer.EachMember(raw, func(k []byte, s answer.Span) {
		if !bytes.EqualFold(k, []byte("_meta")) || raw[s.Value] != '{' {
			return
		}
		m := raw[s.Value:s.End]
		var keep [][]byte
		named := false
		answer.EachMember(m, func(k []byte, ms answer.Span) {
			if string(k) == mcp.MetaKeyServerInfo {
				named = true
			} else {
				keep = append(keep, m[ms.Start:ms.End])
			}
		})
		if named {
			with := append([]byte{'{'}, bytes.Join(keep, []byte{','})...)
			cuts = append(cuts, cut{s.Value, s.End, append(with, '}')})
		}
	})
	w, r := 0, 0 // written up to, read up to: w <= r throughout
	for _, c := range cuts {
		w += copy(raw[w:], raw[r:c.at])
		w += copy(raw[w:], c.with)
		r = c.end
	}
	w += copy(raw[w:], raw[r:])
	return raw[:w]
}
