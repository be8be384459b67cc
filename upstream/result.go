package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Result is a tool call's answer. The direct HTTP path keeps the upstream's
// JSON as it came (Raw) and reads only isError from it: decoding every
// content block only to encode it again for the client is most of what a
// pass-through would otherwise spend. Other paths carry it decoded.
type Result struct {
	Raw     json.RawMessage
	Decoded *mcp.CallToolResult
	IsError bool
}

// Decoded wraps a decoded result.
func Decoded(r *mcp.CallToolResult) *Result { return &Result{Decoded: r, IsError: r.IsError} }

// rawResult wraps a result as the upstream sent it (raw is valid JSON: it
// was decoded from the answer).
func rawResult(raw json.RawMessage) (*Result, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("a tool result must be an object, not %.40s", raw)
	}
	// Most results do not say isError at all; reading the whole result
	// again only to learn that would cost more than passing it on. The key
	// is not missed in another case (encoding/json matches keys so) nor
	// spelled with escapes: any \u means a real look.
	if !containsFold(raw, `"iserror"`) && !bytes.Contains(raw, []byte(`\u`)) {
		return &Result{Raw: raw}, nil
	}
	var head struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	return &Result{Raw: raw, IsError: head.IsError}, nil
}

// containsFold reports whether b holds s (ASCII) in any case.
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if b[i] == s[0] && bytes.EqualFold(b[i:i+len(s)], []byte(s)) {
			return true
		}
	}
	return false
}

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
