// Package protocol is what Warden's layers share about MCP beyond the SDK's
// types: the revisions that mark its eras, the order of log levels, and
// JSON-RPC's answers to what is refused before a method's handler reads it
// (jsonrpc.go).
package protocol

import "github.com/modelcontextprotocol/go-sdk/mcp"

// StatelessSince is the first revision without sessions (no initialize,
// no Mcp-Session-Id): a client or upstream that speaks it or later is of
// the stateless era.
const StatelessSince = "2026-07-28"

// Newest is the newest revision Warden speaks, what it asks an upstream for
// the first time. One that does not speak it says so (or fails the
// discovery), and the SDK client falls back to the newest with sessions.
const Newest = StatelessSince

// TasksExtension is the name of the 2026-07-28 tasks extension (SEP-2663),
// under capabilities.extensions of a server's server/discover and of a
// request's client capabilities.
const TasksExtension = "io.modelcontextprotocol/tasks"

// LevelRank orders the log levels, the most verbose first.
var LevelRank = map[mcp.LoggingLevel]int{
	"debug": 0, "info": 1, "notice": 2, "warning": 3, "error": 4, "critical": 5, "alert": 6, "emergency": 7,
}
