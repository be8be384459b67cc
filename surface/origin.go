package surface

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/writes"
)

// origin is where a call came from, as the gateway records it (the
// activity log, a latch): the endpoint, and the client.
type origin struct {
	surface string
	caller  writes.Caller
	who     callers.Caller // who the request's token named (callers.go)
}

// stdioHeader marks a request that came through warden stdio. ServeHTTP
// alone sets it (a client's own is dropped); the SDK hands it on in a
// request's header, where the call is made.
const stdioHeader = "Warden-Via-Stdio"

// SetStdio tells the surfaces how to know a request that came through
// warden stdio: it comes on the state dir's socket, which the CLI uses for
// the operator API only.
func (s *Surfaces) SetStdio(via func(*http.Request) bool) { s.stdio = via }

// markStdio sets or drops r's stdioHeader.
func (s *Surfaces) markStdio(r *http.Request) {
	if _, sent := r.Header[stdioHeader]; sent {
		r.Header.Del(stdioHeader)
	}
	if s.stdio != nil && s.stdio(r) {
		r.Header.Set(stdioHeader, "1")
	}
}

// originOf is a call's origin: this view's endpoint as a request with
// header h reached it, the caller its token named (callers.go), and the
// client that named itself on its session ss or in the request's meta.
func (v *view) originOf(h http.Header, ss *mcp.ServerSession, meta mcp.Meta) origin {
	o := origin{surface: v.surface, who: v.callerOf(h), caller: clientOf(ss, meta)}
	if h.Get(stdioHeader) != "" {
		o.surface = "stdio:" + v.surface
	}
	o.caller.User = o.who.Name()
	return o
}

// clientOf is the client that named itself on its session ss (nil or a
// stateless-era one: none) or, in the 2026-07-28 revision, in the
// request's meta.
func clientOf(ss *mcp.ServerSession, meta mcp.Meta) writes.Caller {
	if ss != nil && !isStateless(ss) {
		var info *mcp.Implementation
		if p := ss.InitializeParams(); p != nil {
			info = p.ClientInfo
		}
		return writes.ClientOf(info, ss.ID())
	}
	// As _meta decodes: an object of strings.
	if m, ok := meta[mcp.MetaKeyClientInfo].(map[string]any); ok {
		name, _ := m["name"].(string)
		version, _ := m["version"].(string)
		return writes.ClientOf(&mcp.Implementation{Name: name, Version: version}, "")
	}
	return writes.Caller{}
}
