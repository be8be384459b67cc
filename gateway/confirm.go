package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// confirm asks the person behind the calling client, through elicitation,
// whether a destructive call may run. Anything but an explicit accept refuses
// it, and then nothing is sent upstream.
func (g *Gateway) confirm(ctx context.Context, call Call) error {
	declined := func(why string) error {
		return refuse(CodeDeclined, "Destructive call %q on server %q was not confirmed (%s), so it was not sent. Server %q has confirmDestructive set: each destructive call needs a person's yes through the client.", call.Tool, call.Server, why, call.Server)
	}
	if call.Client == nil {
		return declined("the caller is not an MCP client that can ask a person")
	}
	caps := call.Client.Capabilities()
	if caps == nil || caps.Elicitation == nil {
		return declined("the client does not support elicitation")
	}
	a, err := call.Client.Ask(ctx, "", &mcp.ElicitParams{
		Message: fmt.Sprintf("Allow the destructive tool %q on server %q?\nArguments: %s", call.Tool, call.Server, summarize(call.Args)),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"confirm": map[string]any{"type": "boolean", "title": "Run it", "default": false},
		}},
	})
	res, _ := a.(*mcp.ElicitResult)
	switch {
	case err != nil:
		return declined("no answer: " + err.Error())
	case res == nil:
		return declined("the answer was not an elicitation result")
	case res.Action != "accept":
		return declined("the person chose " + res.Action)
	case res.Content["confirm"] != true:
		return declined("the person did not tick 'Run it'")
	}
	return nil
}

// summarize shortens arguments for a confirmation prompt.
func summarize(args []byte) string {
	s := strings.TrimSpace(string(args))
	if s == "" {
		return "{}"
	}
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}
