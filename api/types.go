// Package api is the operator REST API under /v1: server and tool status,
// approvals, write latches, sessions, activity and events. Every route needs
// the operator token; nothing here is reachable from the MCP surfaces. The
// types in this file are the JSON both the daemon and the CLI speak.
package api

import (
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/guardrails"
	"github.com/wardenmcp/warden/instances"
)

// Status answers GET /v1/status.
type Status struct {
	Version       string   `json:"version"`
	UptimeSeconds float64  `json:"uptime_seconds"`
	ConfigPath    string   `json:"config_path"`
	ReloadError   string   `json:"reload_error,omitempty"` // why the last reload was refused
	Listen        string   `json:"listen"`
	Servers       []Server `json:"servers"`
	// ViewTokens estimates what each view's tool list costs a client's
	// context: "all" (every visible tool, /mcp without the search view) and
	// "search" (/mcp?view=search); bytes of the JSON definitions / 4.
	ViewTokens map[string]int `json:"view_tokens"`
	// Instances sharing the store, when it is shared (PostgreSQL); absent
	// for the embedded store, which has one.
	Instances []instances.Instance `json:"instances,omitempty"`
}

// Server answers GET /v1/servers/{s}.
type Server struct {
	Name        string             `json:"name"`
	Transport   string             `json:"transport"`
	Target      string             `json:"target"` // command or URL, without secrets
	Trusted     bool               `json:"trusted"`
	Quarantined bool               `json:"quarantined"`
	DecidedBy   string             `json:"decided_by,omitempty"` // the operator who last admitted or quarantined it
	Disabled    bool               `json:"disabled"`
	State       gateway.Connection `json:"connection"`
	Tools       approval.Counts    `json:"tools"`
	ToolTokens  int                `json:"tool_tokens"` // its visible tools' definitions on /mcp, bytes / 4
	// ConfigError says why the server's entry in the config file cannot be
	// loaded; a server that ran before keeps its previous entry.
	ConfigError string `json:"config_error,omitempty"`
}

// Tool is one entry of GET /v1/servers/{s}/tools.
type Tool struct {
	Name       string          `json:"name"`
	Class      string          `json:"class"`
	Status     approval.Status `json:"status"`
	Present    bool            `json:"present"`
	Hidden     bool            `json:"hidden"`
	HeldBack   bool            `json:"held_back,omitempty"`   // left out of an approval of all tools; approved only by name
	HeldBackAt time.Time       `json:"held_back_at,omitzero"` // when it was held back, if recorded
	Invalid    string          `json:"invalid,omitempty"`     // status invalid: why the name is outside the MCP character set
	// ServerQuarantined: its server is quarantined, so the tool is neither
	// listed to clients nor run whatever its status. Per tool because the
	// answer is a bare list (warden tools --json prints it).
	ServerQuarantined bool                 `json:"server_quarantined,omitempty"`
	ApprovedHash      string               `json:"approved_hash,omitempty"`
	CurrentHash       string               `json:"current_hash"`
	Annotations       *mcp.ToolAnnotations `json:"annotations,omitempty"`
	ApprovedBy        string               `json:"approved_by,omitempty"`
	ApprovedAt        time.Time            `json:"approved_at,omitzero"`
	DecidedBy         string               `json:"decided_by,omitempty"` // the operator who last approved or blocked it
	// Findings are what the guardrails scanner found in the current
	// definition (and, when changed, what the change added), as stored
	// with the record: read these closely before approving.
	Findings []guardrails.Finding `json:"findings"`
	// Reason says why a waiting tool with a high-severity finding is held
	// (approving all passes over it) and the command that approves it.
	Reason   string          `json:"reason,omitempty"`
	Current  json.RawMessage `json:"current,omitempty"`  // definition now
	Approved json.RawMessage `json:"approved,omitempty"` // definition last approved
}

// CallRequest is the body of POST /v1/servers/{s}/call (warden call).
type CallRequest struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Cleared answers DELETE /v1/writes/{s}: every latched call cleared, oldest
// first, and the first again as latch (what earlier versions answered).
type Cleared struct {
	Cleared bool `json:"cleared"`
	Latch   any  `json:"latch,omitempty"`
	Latches any  `json:"latches,omitempty"`
}

// UILogin answers POST /v1/ui/login: a one-time code for the review page,
// and the path that exchanges it for a browser session.
type UILogin struct {
	Code      string    `json:"code"`
	Path      string    `json:"path"` // /ui/login?code=...
	ExpiresAt time.Time `json:"expires_at"`
}

// Error is every error answer: {"error":{"code":...,"message":...}}.
type Error struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody says what went wrong and how to fix it. Code is for programs:
// for example STORE_UNAVAILABLE (503) when the store could not be reached
// and nothing was changed; retry once it is back.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}
