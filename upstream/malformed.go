package upstream

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The requests an upstream sends during a call that the SDK client (v1.8.0)
// refuses before handling them, refused alike on the direct path
// (answerUpstream), worded as the SDK words them: the SDK path is the
// reference, and the differential test (e2e) holds the two to it.

// clientNotifications are the methods the SDK client takes as
// notifications only: sent with an id, they are an invalid request.
var clientNotifications = map[string]bool{
	"notifications/cancelled":                  true,
	"notifications/tools/list_changed":         true,
	"notifications/prompts/list_changed":       true,
	"notifications/resources/list_changed":     true,
	"notifications/resources/updated":          true,
	"notifications/message":                    true,
	"notifications/progress":                   true,
	"notifications/elicitation/complete":       true,
	"notifications/subscriptions/acknowledged": true,
}

// malformed is the error the SDK path answers a request of method with
// params with before any handler sees it, nil if none.
func malformed(method string, params json.RawMessage) *jsonrpc.Error {
	switch {
	case clientNotifications[method]:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("invalid request: unexpected id for %q", method)}
	case method == "sampling/createMessage" && len(params) == 0:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: `invalid request: missing required "params"`}
	case method == "elicitation/create" && (len(params) == 0 || string(params) == "null"):
		// The SDK takes it, and its server session refuses to send
		// the client an elicitation without params.
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params"}
	}
	return nil
}
