// Package question is the one table of the questions an upstream server
// may put to the downstream client during a call (sampling, elicitation,
// roots), in either era: as a 2025 request or in a 2026-07-28 input-required
// result. Every path that carries a question reads it here: its method, the
// capability answering it takes and the type of its answer.
package question

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Method is the server-to-client method of q.
func Method(q mcp.InputRequest) string {
	switch q.(type) {
	case *mcp.CreateMessageWithToolsParams:
		return "sampling/createMessage"
	case *mcp.ElicitParams:
		return "elicitation/create"
	case *mcp.ListRootsParams:
		return "roots/list"
	}
	return fmt.Sprintf("%T", q)
}

// New is an empty question of a server-to-client method, nil for a
// method that is not one.
func New(method string) mcp.InputRequest {
	switch method {
	case "sampling/createMessage":
		return &mcp.CreateMessageWithToolsParams{}
	case "elicitation/create":
		return &mcp.ElicitParams{}
	case "roots/list":
		return &mcp.ListRootsParams{}
	}
	return nil
}

// NewAnswer is an empty answer of the type q asks for.
func NewAnswer(q mcp.InputRequest) mcp.InputResponse {
	switch q.(type) {
	case *mcp.CreateMessageWithToolsParams:
		return &mcp.CreateMessageWithToolsResult{}
	case *mcp.ElicitParams:
		return &mcp.ElicitResult{}
	}
	return &mcp.ListRootsResult{}
}

// Prepare is q as it goes to a 2025 client, filled in as the SDK's server
// session fills it before sending: an elicitation's mode inferred ("url"
// when it names a URL or an elicitation id, else "form"), a sampling
// request's messages never null. The fast path, which sends questions
// itself, uses it so that a client gets the same request on either path.
func Prepare(q mcp.InputRequest) mcp.InputRequest {
	switch p := q.(type) {
	case *mcp.ElicitParams:
		if p.Mode == "" {
			c := *p
			c.Mode = "form"
			if p.URL != "" || p.ElicitationID != "" {
				c.Mode = "url"
			}
			return &c
		}
	case *mcp.CreateMessageWithToolsParams:
		if p.Messages == nil {
			c := *p
			c.Messages = []*mcp.SamplingMessageV2{}
			return &c
		}
	}
	return q
}

// Checked is the client's answer a to q as the SDK's server session
// returns it: an accepted elicitation's content validated against the
// form asked for, with the form's defaults filled in. The fast path,
// which reads answers itself, uses it. (The SDK also refuses forms the
// elicitation rules do not allow; that check is the SDK's alone.)
func Checked(q mcp.InputRequest, a mcp.InputResponse) (mcp.InputResponse, error) {
	p, ok := q.(*mcp.ElicitParams)
	r, _ := a.(*mcp.ElicitResult)
	if !ok || r == nil || r.Action != "accept" || r.Content == nil || p.RequestedSchema == nil {
		return a, nil
	}
	b, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return nil, err
	}
	var schema *jsonschema.Schema
	if err := json.Unmarshal(b, &schema); err != nil || schema == nil {
		return a, err
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil, err
	}
	if err := resolved.Validate(r.Content); err != nil {
		return nil, fmt.Errorf("elicitation result content does not match requested schema: %v", err)
	}
	if err := resolved.ApplyDefaults(&r.Content); err != nil {
		return nil, fmt.Errorf("failed to apply schema defaults to elicitation result: %v", err)
	}
	return r, nil
}

// Capable refuses q, with the protocol's MissingRequiredClientCapability
// error, when caps do not declare what answering it takes. Roots are asked
// of any client: one without them answers with an error of its own.
func Capable(caps *mcp.ClientCapabilities, q mcp.InputRequest) error {
	var need mcp.ClientCapabilities
	switch q.(type) {
	case *mcp.CreateMessageWithToolsParams:
		if caps != nil && caps.Sampling != nil {
			return nil
		}
		need.Sampling = &mcp.SamplingCapabilities{}
	case *mcp.ElicitParams:
		if caps != nil && caps.Elicitation != nil {
			return nil
		}
		need.Elicitation = &mcp.ElicitationCapabilities{}
	default:
		return nil
	}
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &need})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: fmt.Sprintf("the client did not declare the capability %s needs", Method(q))}
}

// AnswerAs reads a client's answer as the type q asks for: an answer that
// came as JSON is told apart by its keys alone, so it may arrive as another
// type.
func AnswerAs(q mcp.InputRequest, a mcp.InputResponse) (mcp.InputResponse, error) {
	want := NewAnswer(q)
	if fmt.Sprintf("%T", a) == fmt.Sprintf("%T", want) {
		return a, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, want); err != nil {
		return nil, fmt.Errorf("the client's answer to %s is not one: %w", Method(q), err)
	}
	return want, nil
}
