package surface

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/protocol"
)

// Two eras of the protocol on one endpoint. The 2025 revisions keep a
// session (initialize, then Mcp-Session-Id on every request); the 2026-07-28
// revision has none: each request carries its protocol version, client
// capabilities and client info, and is answered on its own. The SDK serves
// each era with a handler of its own over the same server, so an endpoint
// holds both and picks one per request.

// protocolVersions are the protocol versions the surfaces speak, newest
// first; sessionVersions those of them with sessions.
var (
	protocolVersions = []string{protocol.StatelessSince, "2025-11-25", "2025-06-18", "2025-03-26"}
	sessionVersions  = protocolVersions[1:]
)

// endpoint is one endpoint's pair of SDK handlers.
type endpoint struct {
	sessions  http.Handler // the 2025 revisions
	stateless http.Handler // 2026-07-28 and later
}

func newEndpoint(srv *mcp.Server) endpoint {
	// Host and Origin are checked for every path by the daemon's listener.
	opts := mcp.StreamableHTTPOptions{DisableLocalhostProtection: true, MaxRequestBodyBytes: maxBody}
	stateless := opts
	stateless.Stateless = true
	get := func(*http.Request) *mcp.Server { return srv }
	return endpoint{
		sessions:  mcp.NewStreamableHTTPHandler(get, &opts),
		stateless: mcp.NewStreamableHTTPHandler(get, &stateless),
	}
}

// statelessRequest reports whether r is of the stateless era: no session,
// and a protocol version of that era in the Mcp-Protocol-Version header or,
// without the header, in the request's _meta (the stateless handler then
// says the header is missing; the session handler would only say it does
// not speak that version). The body read to find out is put back.
func statelessRequest(r *http.Request) bool {
	if r.Header.Get("Mcp-Session-Id") != "" {
		return false
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
		return v >= protocol.StatelessSince
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	body, err := readBody(r)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	return err == nil && bytes.Contains(body, []byte(`"`+mcp.MetaKeyProtocolVersion+`"`))
}

// isStateless reports whether a request's session is a stateless-era one.
func isStateless(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= protocol.StatelessSince
}

// hopMeta is a request's _meta without the keys the protocol reserves for
// the hop it came over (in the stateless era: the client's protocol
// version, info and capabilities). They describe the client's connection
// to Warden, not Warden's to the upstream, which has its own. The log
// level the request asks for stays: it is the client's wish of the
// upstream too.
func hopMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k := range m {
		if strings.HasPrefix(k, reservedMeta) && k != mcp.MetaKeyLogLevel {
			if out == nil {
				out = maps.Clone(m)
			}
			delete(out, k)
		}
	}
	if out == nil {
		return m
	}
	return out
}

// reservedMeta prefixes the protocol's own _meta keys.
const reservedMeta = "io.modelcontextprotocol/"
