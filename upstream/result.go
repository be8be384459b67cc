package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
)

// rawResult wraps a result as the upstream sent it (raw is valid JSON: it
// was decoded from the answer) but for the upstream's name, cut out of raw
// itself (see cutServerInfo), reading only isError and whether it asks for
// input instead (see inputRequired).
func rawResult(raw json.RawMessage) (res *answer.Result, asks bool, err error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false, fmt.Errorf("a tool result must be an object, not %.40s", raw)
	}
	// Most results say neither isError nor that input is required (with
	// questions, or without: "busy, call again"), and a 2025 upstream's
	// results name no server; reading the whole result again only to learn
	// that would cost more than passing it on.
	if !answer.MayHold(raw, resultKeys...) {
		return &answer.Result{Raw: raw}, false, nil
	}
	if answer.MayHold(raw, mcp.MetaKeyServerInfo) {
		raw = cutServerInfo(raw)
	}
	if !answer.MayHold(raw, resultFlags...) {
		return &answer.Result{Raw: raw}, false, nil
	}
	var isError bool
	err = sdkMembers(raw, func(key string, v []byte) error {
		switch key {
		case "isError":
			return json.Unmarshal(v, &isError)
		case "resultType":
			var t string
			err := json.Unmarshal(v, &t)
			asks = asks || t == "input_required"
			return err
		case "inputRequests":
			var q map[string]json.RawMessage
			err := json.Unmarshal(v, &q)
			asks = asks || len(q) > 0
			return err
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return &answer.Result{Raw: raw, IsError: isError}, asks, nil
}

// The keys rawResult looks for in a result: its flags, and the keys that
// need reading the result again.
var (
	resultFlags = []string{"isError", "inputRequests", "input_required"}
	resultKeys  = append(slices.Clone(resultFlags), mcp.MetaKeyServerInfo)
)

// decodeMessage decodes a message of a call's answer stream, its keys
// matched as the SDK's client matches them (see sdkMembers). The result is
// not copied: it refers into data, which the caller leaves alone once it
// has the answer (a large answer is held once, not twice). The rest is
// copied: a request's id and params outlive the event that carried them.
func decodeMessage(data []byte) (*rpcMessage, error) {
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON-RPC message: not JSON")
	}
	var m rpcMessage
	err := sdkMembers(data, func(key string, v []byte) (err error) {
		switch key {
		case "id":
			m.ID = bytes.Clone(v)
		case "method":
			err = json.Unmarshal(v, &m.Method)
		case "params":
			m.Params = bytes.Clone(v)
		case "result":
			m.Result = v
		case "error":
			m.Error, err = decodeError(v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// decodeError decodes a JSON-RPC error object as the SDK does (null: none).
func decodeError(v []byte) (*jsonrpc.Error, error) {
	if string(v) == "null" {
		return nil, nil
	}
	e := &jsonrpc.Error{}
	return e, sdkMembers(v, func(key string, v []byte) error {
		switch key {
		case "code":
			return json.Unmarshal(v, &e.Code)
		case "message":
			return json.Unmarshal(v, &e.Message)
		case "data":
			e.Data = bytes.Clone(v)
		}
		return nil
	})
}

// sdkMembers calls fn with each member of obj (valid JSON), in order, as
// the SDK's decoder matches them to a struct's fields: its key with escapes
// read, and compared exactly. JSON keys are case-sensitive; encoding/json
// would take "ISERROR" for isError, and Warden would then read a result
// otherwise than the SDK and the client do. Of members with the same key,
// the last one counts (fn sees each). It stops at fn's first error; obj
// not an object is an error.
func sdkMembers(obj []byte, fn func(key string, value []byte) error) error {
	var err error
	isObject := answer.EachMember(obj, func(k []byte, s answer.Span) {
		if err == nil {
			err = fn(string(k), obj[s.Value:s.End])
		}
	})
	if !isObject {
		return fmt.Errorf("a JSON object was expected, not %.40s", obj)
	}
	return err
}
