package upstream

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// rawWithoutServerInfo is a tool result as the upstream sent it (raw, valid
// JSON), without the upstream's name. Only _meta is rewritten; a result
// whose keys the cut cannot read for certain (written with escapes, or
// _meta twice, which decoders read differently) is decoded and encoded
// again instead.
func rawWithoutServerInfo(raw json.RawMessage) (json.RawMessage, error) {
	var meta span
	metas := 0
	plain := eachMember(raw, func(k []byte, s span) {
		if bytes.EqualFold(k, []byte("_meta")) {
			meta = s
			metas++
		}
	})
	one := plain && metas <= 1 // else decoded
	if one && (metas == 0 || raw[meta.value] != '{') {
		return raw, nil
	}
	var keep [][]byte
	cut := false
	if one {
		m := raw[meta.value:meta.end]
		one = eachMember(m, func(k []byte, s span) {
			if string(k) == mcp.MetaKeyServerInfo {
				cut = true
			} else {
				keep = append(keep, m[s.start:s.end])
			}
		})
	}
	switch {
	case one && !cut:
		return raw, nil
	case one:
		out := make([]byte, 0, len(raw))
		out = append(out, raw[:meta.value]...)
		out = append(out, '{')
		out = append(out, bytes.Join(keep, []byte{','})...)
		out = append(out, '}')
		return append(out, raw[meta.end:]...), nil
	}
	var d mcp.CallToolResult
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	delete(d.Meta, mcp.MetaKeyServerInfo)
	return json.Marshal(&d)
}
