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

// MayHold reports whether raw, valid JSON, may hold one of keys (ASCII)
// as a key at any depth: whether one of its strings, escapes read, is one
// of keys in any case (encoding/json matches keys so, Unicode's simple
// folding too); a value counts too. Only the strings' quotes are looked
// for, and only a string short enough to spell a key is read.
func MayHold(raw []byte, keys ...string) bool {
	longest := 0
	for _, k := range keys {
		longest = max(longest, len(k))
	}
	for i := 0; ; {
		open := bytes.IndexByte(raw[i:], '"')
		if open < 0 {
			return false
		}
		start := i + open + 1
		// The closing quote (raw is valid JSON, so there is one).
		end := skipValue(raw, start-1) - 1
		if s := raw[start:end]; len(s) <= 6*longest { // \uXXXX: six bytes a letter
			if bytes.IndexByte(s, '\\') >= 0 {
				if !spellsLength(s, keys) {
					i = end + 1
					continue
				}
				var text string
				if json.Unmarshal(raw[start-1:end+1], &text) != nil {
					return true
				}
				s = []byte(text)
			}
			for _, k := range keys {
				if bytes.EqualFold(s, []byte(k)) {
					return true
				}
			}
		}
		i = end + 1
	}
}

// spellsLength reports whether s, a JSON string's inside with escapes, may
// spell as many letters as one of keys has (ASCII): a key's letter is one
// rune of s, or one escape, whichever way it is written (a letter that
// folds to it, such as the Kelvin sign for k, is one rune too). It spares
// MayHold reading the escapes of strings that cannot be a key.
func spellsLength(s []byte, keys []string) bool {
	n := 0
	for j := 0; j < len(s); j++ {
		switch {
		case s[j] == '\\' && j+1 < len(s) && s[j+1] == 'u':
			j += 5
		case s[j] == '\\':
			j++
		case s[j]&0xC0 == 0x80:
			continue // inside a rune
		}
		n++
	}
	for _, k := range keys {
		if len(k) == n {
			return true
		}
	}
	return false
}

// TaskHandle reports whether the result is the task handle of an upstream
// that speaks the tasks extension itself (a CreateTaskResult: resultType
// "task"), and the task's id there. Only a result as sent (Raw) is one.
func (r *Result) TaskHandle() (id string, ok bool) {
	if r.Raw == nil || !MayHold(r.Raw, "resultType") {
		return "", false
	}
	var h struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if json.Unmarshal(r.Raw, &h) != nil || h.ResultType != "task" || h.TaskID == "" {
		return "", false
	}
	return h.TaskID, true
}
