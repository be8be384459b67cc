package bridge

import (
	"bytes"
	"encoding/json"
)

// JSON-RPC 2.0's codes for a message that is not JSON, and for JSON that is
// not a message.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// refusal is the bridge's own answer to a line it cannot forward.
type refusal struct {
	id      json.RawMessage // the message's id when it has a usable one, else null
	code    int
	message string
}

var nullID = json.RawMessage("null")

// check finds what makes line no JSON-RPC 2.0 message, or a batch of none,
// and returns the answer JSON-RPC asks for; nil when it can be forwarded.
// Warden's endpoint refuses such a line with HTTP 400, which carries no
// answer the client could read, so the bridge answers it itself. Keys are
// matched in their own case, as the SDK matches them.
func check(line []byte) *refusal {
	if !json.Valid(line) {
		return &refusal{nullID, codeParseError, "Parse error: the line is not JSON; warden stdio reads one JSON-RPC message per line"}
	}
	if line[0] == '[' {
		var batch []json.RawMessage
		_ = json.Unmarshal(line, &batch) // valid JSON starting with [
		if len(batch) == 0 {
			return &refusal{nullID, codeInvalidRequest, "Invalid Request: an empty batch"}
		}
		for _, m := range batch {
			if r := checkMessage(m); r != nil {
				r.message += " (in a batch: nothing of it was sent)"
				return r
			}
		}
		return nil
	}
	return checkMessage(line)
}

// checkMessage checks one message of JSON-RPC 2.0: a request or notification
// (a string method), or a response (an id, with a result or an error).
func checkMessage(msg []byte) *refusal {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m == nil {
		return &refusal{nullID, codeInvalidRequest, "Invalid Request: a message is a JSON object"}
	}
	id, hasID := m["id"]
	if hasID && !usableID(id) {
		return &refusal{nullID, codeInvalidRequest, "Invalid Request: the id is not a string, a number or null"}
	}
	if !hasID {
		id = nullID
	}
	invalid := func(why string) *refusal { return &refusal{id, codeInvalidRequest, "Invalid Request: " + why} }
	if string(m["jsonrpc"]) != `"2.0"` {
		return invalid(`"jsonrpc" is not "2.0"`)
	}
	method, isCall := m["method"]
	switch {
	case isCall:
		if len(method) == 0 || method[0] != '"' {
			return invalid(`"method" is not a string`)
		}
	case m["result"] == nil && m["error"] == nil:
		return invalid(`the message has neither "method" (a request) nor "result" or "error" (a response)`)
	case !hasID:
		return invalid(`a response has no "id"`)
	}
	return nil
}

// usableID reports whether id is an id JSON-RPC allows: a string, a number
// or null.
func usableID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return string(id) == "null"
}
