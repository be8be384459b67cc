// Package answer is a tool call's answer as it travels from an upstream to
// a client: raw or decoded, and the work left once it is sent. The upstream
// makes it, the gateway passes it on and the surfaces write it.
package answer

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is a tool call's answer. The direct HTTP path keeps the upstream's
// JSON as it came (Raw) and reads only isError and whether it asks for input
// from it: decoding every content block only to encode it again for the
// client is most of what a pass-through would otherwise spend. Other paths
// carry it decoded.
type Result struct {
	Raw     json.RawMessage // an object, from its '{' to its '}'
	Decoded *mcp.CallToolResult
	IsError bool
}

// Decoded wraps a decoded result.
func Decoded(r *mcp.CallToolResult) *Result { return &Result{Decoded: r, IsError: r.IsError} }

// Tool returns the result decoded.
func (r *Result) Tool() (*mcp.CallToolResult, error) {
	if r.Decoded == nil {
		var d mcp.CallToolResult
		if err := json.Unmarshal(r.Raw, &d); err != nil {
			return nil, err
		}
		r.Decoded = &d
	}
	return r.Decoded, nil
}

// MarshalJSON writes the result as the upstream sent it, or encoded.
func (r *Result) MarshalJSON() ([]byte, error) {
	if r.Raw != nil {
		return r.Raw, nil
	}
	return json.Marshal(r.Decoded)
}

// MayHold reports whether raw, JSON, may hold one of keys (lower-case
// ASCII, each from its opening quote: `"iserror"`) as a key at any depth:
// whether it holds one in any case (encoding/json matches keys so), or a
// \u escape, which could spell one. One pass over raw's quotes.
func MayHold(raw []byte, keys ...string) bool {
	if bytes.Contains(raw, []byte(`\u`)) {
		return true
	}
	for i := bytes.IndexByte(raw, '"'); i >= 0; {
		for _, k := range keys {
			if len(raw)-i >= len(k) && bytes.EqualFold(raw[i:i+len(k)], []byte(k)) {
				return true
			}
		}
		j := bytes.IndexByte(raw[i+1:], '"')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}
