package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC error answers, for what Warden refuses before any handler of a
// method reads a message: a line or body that is no JSON-RPC message, or a
// request refused for where it was sent (no such endpoint, too large, not
// from this machine). An MCP client shows such an answer's message; an
// HTTP status alone it shows as "Bad Request".

// NullID is the id of an answer to a message whose id cannot be read.
var NullID = json.RawMessage("null")

// CodeServerError is JSON-RPC's code for a server's own error (from the
// range it leaves to implementations): refused for now, retry later.
const CodeServerError = -32000

// ErrorReply is a JSON-RPC error response, its id as the request wrote it.
type ErrorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// NewErrorReply is the error answer code, message to the request id.
func NewErrorReply(id json.RawMessage, code int64, message string) ErrorReply {
	r := ErrorReply{JSONRPC: "2.0", ID: id}
	r.Error.Code, r.Error.Message = code, message
	return r
}

// EncodeReplies is answers as JSON: batched, a batch; else its one answer.
func EncodeReplies(answers []ErrorReply, batched bool) []byte {
	var b []byte
	if batched {
		b, _ = json.Marshal(answers)
	} else {
		b, _ = json.Marshal(answers[0])
	}
	return b
}

// Messages reads body, one JSON-RPC message or a batch of them, as T each:
// a message alone is a batch of one.
func Messages[T any](body []byte) ([]T, error) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		var batch []T
		err := json.Unmarshal(b, &batch)
		return batch, err
	}
	var one T
	if err := json.Unmarshal(body, &one); err != nil {
		return nil, err
	}
	return []T{one}, nil
}

// Refusals are the answers to body, a message or batch refused as a whole
// for why: one to each request of a batch (batched), or one to the message
// under its id, null when it has none usable (a notification, a response,
// a batch of those). body may be cut short: the id is read from its start.
func Refusals(body []byte, code int64, why string) (answers []ErrorReply, batched bool) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		var batch []envelope
		_ = json.Unmarshal(b, &batch)
		for _, m := range batch {
			if m.Method != "" && IsRequestID(m.ID) {
				answers = append(answers, NewErrorReply(m.ID, code, why))
			}
		}
		if len(answers) > 0 {
			return answers, true
		}
	}
	id, response := IDOf(body)
	if response || !IsRequestID(id) {
		id = NullID // a response is answered under none
	}
	return []ErrorReply{NewErrorReply(id, code, why)}, false
}

// IDOf finds the top-level id of a message, which may be cut short, by
// walking its members until the data ends; response is set if it has a
// result or an error.
func IDOf(prefix []byte) (id json.RawMessage, response bool) {
	d := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for d.More() {
		t, err := d.Token()
		key, ok := t.(string)
		var v json.RawMessage
		if err != nil || !ok || d.Decode(&v) != nil {
			break
		}
		switch key {
		case "id":
			id = v
		case "result", "error":
			response = true
		}
	}
	return id, response
}

// envelope is what the answers need of a message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// IsRequestID reports whether id is one a request can be answered under:
// a string or a number (not absent, null, or other JSON).
func IsRequestID(id json.RawMessage) bool { return string(id) != "null" && usableID(id) }

// Check finds what makes body no JSON-RPC 2.0 message, nor a batch of
// them, and returns the answers JSON-RPC asks for, batched when they go out
// as one batch; none when body is one. Keys are matched in their own case,
// as the SDK matches them.
func Check(body []byte) (answers []ErrorReply, batched bool) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return []ErrorReply{NewErrorReply(NullID, jsonrpc.CodeParseError, "Parse error: the message is not JSON; send one JSON-RPC 2.0 message (or, before 2025-06-18, a batch of them)")}, false
	}
	if body[0] != '[' {
		if r := checkMessage(body); r != nil {
			return []ErrorReply{*r}, false
		}
		return nil, false
	}
	var batch []json.RawMessage
	_ = json.Unmarshal(body, &batch) // valid JSON starting with [
	if len(batch) == 0 {
		return []ErrorReply{NewErrorReply(NullID, jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch")}, false
	}
	// A batch with an invalid message is refused whole: each of its
	// requests is answered, so that none waits for good.
	invalid := false
	for _, m := range batch {
		if r := checkMessage(m); r != nil {
			invalid = true
			answers = append(answers, *r)
			continue
		}
		var e envelope
		if json.Unmarshal(m, &e) == nil && e.Method != "" && IsRequestID(e.ID) {
			answers = append(answers, NewErrorReply(e.ID, jsonrpc.CodeInvalidRequest, "Invalid Request: not served, since another message of its batch is invalid"))
		}
	}
	if !invalid {
		return nil, false
	}
	return answers, true
}

// checkMessage checks one message of JSON-RPC 2.0: a request or notification
// (a string method), or a response (an id, with a result or an error).
func checkMessage(msg []byte) *ErrorReply {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m == nil {
		r := NewErrorReply(NullID, jsonrpc.CodeInvalidRequest, "Invalid Request: a message is a JSON object")
		return &r
	}
	id, hasID := m["id"]
	if hasID && !usableID(id) {
		r := NewErrorReply(NullID, jsonrpc.CodeInvalidRequest, "Invalid Request: the id is not a string, a number or null")
		return &r
	}
	if !hasID {
		id = NullID
	}
	invalid := func(why string) *ErrorReply {
		r := NewErrorReply(id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why)
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
