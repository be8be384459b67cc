package upstream

import (
	"bytes"
	"encoding/json"
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
	var head struct {
		IsError       bool                       `json:"isError"`
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, false, err
	}
	return &answer.Result{Raw: raw, IsError: head.IsError}, head.ResultType == "input_required" || len(head.InputRequests) > 0, nil
}

// The keys rawResult looks for in a result: its flags, and the keys that
// need reading the result again.
var (
	resultFlags = []string{"isError", "inputRequests", "input_required"}
	resultKeys  = append(slices.Clone(resultFlags), mcp.MetaKeyServerInfo)
)

// decodeMessage decodes a message of a call's answer stream. The result of
// the answer to id is not copied: it refers into data, which the caller
// then leaves alone (a large answer is held once, not twice).
func decodeMessage(data []byte, id string) (*rpcMessage, error) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Error  *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal(data, &head); err != nil { // checks all of data
		return nil, err
	}
	if head.Method == "" && idIs(head.ID, id) {
		if res, ok := member(data, "result"); ok || head.Error != nil {
			return &rpcMessage{ID: head.ID, Result: res, Error: head.Error}, nil
		}
	}
	var m rpcMessage
	return &m, json.Unmarshal(data, &m)
}

// member finds the value of a member of obj, valid JSON, as encoding/json
// would (the key in any case, the last of several).
func member(obj []byte, key string) (found []byte, ok bool) {
	answer.EachMember(obj, func(k []byte, s answer.Span) {
		if bytes.EqualFold(k, []byte(key)) {
			found = obj[s.Value:s.End]
		}
	})
	return found, found != nil
}
