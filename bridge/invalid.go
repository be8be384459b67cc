package bridge

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var nullID = json.RawMessage("null")

// check finds what makes line no JSON-RPC 2.0 message, nor a batch of them,
// and returns the answers JSON-RPC asks for, batched when they go out as
// one batch; none when line can be forwarded. Warden's endpoint refuses such
// a line with HTTP 400, which carries no answer the client could read, so
// the bridge answers it itself. Keys are matched in their own case, as the
// SDK matches them.
func check(line []byte) (answers []errorReply, batched bool) {
	if !json.Valid(line) {
		return []errorReply{newErrorReply(nullID, jsonrpc.CodeParseError, "Parse error: the line is not JSON; warden stdio reads one JSON-RPC message per line")}, false
	}
	if line[0] != '[' {
		if r := checkMessage(line); r != nil {
			return []errorReply{*r}, false
		}
		return nil, false
	}
	var batch []json.RawMessage
	_ = json.Unmarshal(line, &batch) // valid JSON starting with [
	if len(batch) == 0 {
		return []errorReply{newErrorReply(nullID, jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch")}, false
	}
	// A batch with an invalid message is not sent: each of its requests is
	// answered, so that none waits for good.
	invalid := false
	for _, m := range batch {
		if r := checkMessage(m); r != nil {
			invalid = true
			answers = append(answers, *r)
			continue
		}
		var e envelope
		if json.Unmarshal(m, &e) == nil && e.Method != "" && hasID(e.ID) {
			answers = append(answers, newErrorReply(e.ID, jsonrpc.CodeInvalidRequest, "Invalid Request: not sent, since another message of its batch is invalid"))
		}
	}
	if !invalid {
		return nil, false
	}
	return answers, true
}

// checkMessage checks one message of JSON-RPC 2.0: a request or notification
// (a string method), or a response (an id, with a result or an error).
func checkMessage(msg []byte) *errorReply {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m == nil {
		r := newErrorReply(nullID, jsonrpc.CodeInvalidRequest, "Invalid Request: a message is a JSON object")
		return &r
	}
	id, hasID := m["id"]
	if hasID && !usableID(id) {
		r := newErrorReply(nullID, jsonrpc.CodeInvalidRequest, "Invalid Request: the id is not a string, a number or null")
		return &r
	}
	if !hasID {
		id = nullID
	}
	invalid := func(why string) *errorReply {
		r := newErrorReply(id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why)
		return &r
	}
	if stringOf(m["jsonrpc"]) != "2.0" {
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

// stringOf is the JSON string raw holds, "" if it holds none.
func stringOf(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}
