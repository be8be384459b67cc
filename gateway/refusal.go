package gateway

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Code names why Warden refused a call. Clients read it from
// _meta["warden/refusal"].code; people read the text.
type Code string

const (
	CodeQuarantined Code = "SERVER_QUARANTINED"
	CodePending     Code = "TOOL_PENDING"
	CodeChanged     Code = "TOOL_CHANGED"
	CodeBlocked     Code = "TOOL_BLOCKED"
	CodeLatched     Code = "WRITES_LATCHED"
	CodeUnavailable Code = "UPSTREAM_UNAVAILABLE"
	CodeDeclined    Code = "CONFIRMATION_DECLINED"
	CodeAuth        Code = "AUTH_REQUIRED"
	// The tool is outside what the caller's profiles allow (package callers).
	CodeNotPermitted Code = "NOT_PERMITTED"
	// The store (the database the "store" setting names) could not be
	// reached: a write's latch state is unknown, so it is not admitted.
	CodeStoreUnavailable Code = "STORE_UNAVAILABLE"
	// The arguments carry a credential and the server's config does not
	// allow secrets (package guardrails).
	CodeArgumentsBlocked Code = "ARGUMENTS_BLOCKED"
)

// StoreHelp is what to do when the store cannot be reached (STORE_UNAVAILABLE).
const StoreHelp = `check that the database the "store" setting names is up and reachable from this machine (warden status shows each instance), then retry`

// Refusal is a policy decision not to run a call. It is answered as a tool
// result with isError, so the agent sees it and can tell the person what to do.
type Refusal struct {
	Code Code
	Text string // why, and the operator command that resolves it
}

func (r *Refusal) Error() string { return string(r.Code) + ": " + r.Text }

// Result renders the refusal as the MCP tool result clients receive.
func (r *Refusal) Result() *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: r.Text}},
		Meta:    mcp.Meta{"warden/refusal": map[string]any{"code": string(r.Code)}},
	}
}

func refuse(code Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Text: fmt.Sprintf(format, args...)}
}
