package upstream

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK's streamable client wraps an error of the HTTP client's transport
// in its JSON-RPC "rejected by transport" error: a refusal for want of a
// login wrapped so is still Warden's, not the upstream's answer.
func TestAnsweredNotAuthRequired(t *testing.T) {
	rejected := &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"the upstream's JSON-RPC error", fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}), true},
		{"auth required, wrapped by the SDK", fmt.Errorf("sending %q: %w: %w", "tools/call", rejected, AuthRequired("s")), false},
		{"auth required", AuthRequired("s"), false},
		{"a plain transport error", errors.New("connection refused"), false},
		{"a transport error, wrapped by the SDK", fmt.Errorf("sending %q: %w: %w", "tools/call", rejected, errors.New("connection reset")), false},
		{"a non-2xx answer's JSON-RPC body, wrapped by the SDK", fmt.Errorf("sending %q: %w: %w", "tools/call", rejected, &jsonrpc.Error{Code: -32021, Message: "need sampling"}), true},
	} {
		if got := Answered(c.err); got != c.want {
			t.Errorf("%s: Answered = %v, want %v", c.name, got, c.want)
		}
	}
}
