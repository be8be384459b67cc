package surface

import (
	"maps"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hopMeta drops what describes the client's hop to Warden and keeps the
// rest, the log level the request asks for included.
func TestHopMeta(t *testing.T) {
	in := mcp.Meta{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientCapabilities: map[string]any{},
		mcp.MetaKeyClientInfo:         map[string]any{"name": "c"},
		mcp.MetaKeyLogLevel:           "info",
		"progressToken":               "p",
		"example.com/trace":           "x",
	}
	want := mcp.Meta{mcp.MetaKeyLogLevel: "info", "progressToken": "p", "example.com/trace": "x"}
	if got := hopMeta(in); !maps.Equal(got, want) {
		t.Errorf("hopMeta = %v, want %v", got, want)
	}
	if len(in) != 6 {
		t.Errorf("hopMeta changed its argument: %v", in)
	}
	plain := mcp.Meta{"progressToken": "p"}
	if got := hopMeta(plain); !maps.Equal(got, plain) {
		t.Errorf("hopMeta(%v) = %v", plain, got)
	}
}
