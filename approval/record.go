package approval

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/guardrails"
)

// Status is where a tool stands in review. Only approved tools of an admitted
// server are listed and callable.
type Status string

const (
	// StatusPending: seen but never approved; waits for an operator.
	StatusPending Status = "pending"
	// StatusApproved: the current definition is the approved one.
	StatusApproved Status = "approved"
	// StatusChanged: was approved, but the definition now differs (a possible
	// rug pull); held until approved again or reverted.
	StatusChanged Status = "changed"
	// StatusBlocked: refused by an operator, whatever its definition.
	StatusBlocked Status = "blocked"
	// StatusInvalid: the name is outside the MCP character set (NameProblem,
	// the record's Invalid says how). Never listed or callable, and neither
	// approval nor block changes that; only a rename by the server (a new
	// tool) does.
	StatusInvalid Status = "invalid"
)

func (s Status) valid() bool {
	switch s {
	case StatusPending, StatusApproved, StatusChanged, StatusBlocked, StatusInvalid:
		return true
	}
	return false
}

// Who approved a definition.
const (
	ApprovedByBaseline = "baseline" // a trusted server's first complete inventory
	ApprovedByOperator = "operator" // a human, through CLI, REST or web UI
)

// ToolRecord is the pinned state of one (server, tool). Records outlive a
// tool's absence from the inventory so a decision is never lost; an absent
// tool (Present false) is neither listed nor callable.
//
// Records returned by the Registry are copies; change them freely.
type ToolRecord struct {
	Server       string          `json:"server"`
	Name         string          `json:"name"`
	Status       Status          `json:"status"`
	Present      bool            `json:"present"`                 // in the latest applied inventory
	ApprovedHash string          `json:"approved_hash,omitempty"` // kept while changed, for revert
	CurrentHash  string          `json:"current_hash"`
	Current      json.RawMessage `json:"current,omitempty"`  // canonical definition, for diffs
	Approved     json.RawMessage `json:"approved,omitempty"` // last approved definition
	ApprovedBy   string          `json:"approved_by,omitempty"`
	ApprovedAt   time.Time       `json:"approved_at,omitzero"`
	// DecidedBy is the operator who last approved or blocked the tool
	// (callers.Operator's Name); "" for a baseline's approval.
	DecidedBy string    `json:"decided_by,omitempty"`
	FirstSeen time.Time `json:"first_seen,omitzero"`
	// HeldBack marks a pending or changed tool an operator left out of an
	// approval of all tools by name (ToolApproval.Except): approvals of
	// "everything" pass it over, so only naming it approves it. HeldBackAt
	// is when, for the person who meets it later (zero in records written
	// before it was kept).
	HeldBack   bool      `json:"held_back,omitempty"`
	HeldBackAt time.Time `json:"held_back_at,omitzero"`
	// LastSeen is the last pass that saw the tool. It is stored only with
	// another change (unchanged records are not rewritten); the Registry
	// reports the latest pass of this process for present tools.
	LastSeen    time.Time            `json:"last_seen,omitzero"`
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"` // current
	// Invalid says why an invalid tool's name is outside the MCP character
	// set; "" for every other status. It follows from the name, so it is
	// not stored but set again on load.
	Invalid string `json:"invalid,omitempty"`
	// Findings are what the guardrails scanner found in Current and, while
	// it differs from Approved, what the change added: made once when a
	// definition is first seen or changes, and stored with it.
	Findings []guardrails.Finding `json:"findings,omitempty"`
	// Reason says why a pending or changed tool with a high-severity
	// finding is held (a trusted server's baseline left it pending;
	// approving all passes over it) and how to approve it; "" otherwise.
	Reason string `json:"reason,omitempty"`
}

// visible reports whether the tool may be listed and called.
func (t *ToolRecord) visible(quarantined bool) bool {
	return t != nil && !quarantined && t.Present && t.Status == StatusApproved
}

// sameState reports whether writing b over a would change anything that
// matters; LastSeen alone is not worth a write.
func sameState(a, b *ToolRecord) bool {
	return a.Status == b.Status && a.Present == b.Present &&
		a.CurrentHash == b.CurrentHash && a.ApprovedHash == b.ApprovedHash &&
		a.ApprovedBy == b.ApprovedBy && a.ApprovedAt.Equal(b.ApprovedAt) && a.HeldBack == b.HeldBack && a.DecidedBy == b.DecidedBy &&
		a.Reason == b.Reason
}

// holdBack marks the record held back by an operator at now.
func (t *ToolRecord) holdBack(now time.Time) { t.HeldBack, t.HeldBackAt = true, now }

// release ends a hold-back: the tool was decided (approved, blocked) or can
// no longer be (invalid).
func (t *ToolRecord) release() { t.HeldBack, t.HeldBackAt = false, time.Time{} }

// clone returns a deep copy, so callers cannot reach the registry's records.
func (t *ToolRecord) clone() ToolRecord {
	c := *t
	c.Current = append(json.RawMessage(nil), t.Current...)
	c.Approved = append(json.RawMessage(nil), t.Approved...)
	c.Findings = slices.Clone(t.Findings)
	if t.Annotations != nil {
		a := *t.Annotations
		c.Annotations = &a
	}
	return c
}

// Reasons a server is quarantined.
const (
	QuarantinedUntrusted  = "untrusted" // new untrusted server, never admitted
	QuarantinedByOperator = "operator"  // explicit quarantine; config cannot lift it
)

// serverMeta is a server's stored admission state. It is written as a whole,
// so every change to it is a read-modify-write under the server's lock.
type serverMeta struct {
	Quarantined   bool      `json:"quarantined"`
	QuarantinedBy string    `json:"quarantined_by,omitempty"`
	QuarantinedAt time.Time `json:"quarantined_at,omitzero"`
	// Baselined records the baseline decision: set by a trusted server's first
	// complete inventory (even an empty one) or by a server approval. After
	// it, new tools are pending.
	Baselined  bool      `json:"baselined"`
	BaselineBy string    `json:"baseline_by,omitempty"`
	BaselineAt time.Time `json:"baseline_at,omitzero"`
	AdmittedAt time.Time `json:"admitted_at,omitzero"` // last server approval
	DecidedBy  string    `json:"decided_by,omitempty"` // the operator who last admitted or quarantined it
}

// ServerState is a server's admission state and its tools counted by status.
type ServerState struct {
	Name          string `json:"name"`
	Quarantined   bool   `json:"quarantined"`
	QuarantinedBy string `json:"quarantined_by,omitempty"`
	DecidedBy     string `json:"decided_by,omitempty"` // the operator who last admitted or quarantined it
	Baselined     bool   `json:"baselined"`
	Counts        Counts `json:"tools"`
}

// Counts counts present tools by status; Absent counts records of tools no
// longer in the inventory.
type Counts struct {
	Pending  int `json:"pending"`
	Approved int `json:"approved"`
	Changed  int `json:"changed"`
	Blocked  int `json:"blocked"`
	Invalid  int `json:"invalid"`
	Absent   int `json:"absent"`
	// HeldBack counts the pending tools an operator held back (see
	// ToolRecord.HeldBack), which Pending counts too: Pending-HeldBack
	// is the pending tools that need a decision.
	HeldBack int `json:"held_back"`
}

// Undecided is how many pending tools need a decision: not held back.
func (c Counts) Undecided() int { return c.Pending - c.HeldBack }

// Change describes one committed transaction, for tools/list_changed and
// /v1/events. Version increases by one per committed change of the server:
// subscribers run outside the lock and may see changes out of order.
type Change struct {
	Server            string       `json:"server"`
	Cause             string       `json:"cause"` // discovery | config | approve | block | quarantine | sync (another instance's, reloaded)
	Version           uint64       `json:"version"`
	Tools             []ToolChange `json:"tools,omitempty"` // every record written, by name
	Quarantined       bool         `json:"quarantined"`     // after the change
	QuarantineChanged bool         `json:"quarantine_changed,omitempty"`
	VisibleChanged    bool         `json:"visible_changed"` // the listable set changed
}

// ToolChange is one written record: status and presence before and after.
// From is "" for a tool seen for the first time; From == To with a new
// definition means a pending or blocked tool's definition changed.
//
// Findings and Reason are the record's (ToolRecord) when its definition is
// new or changed, so a watcher of /v1/events sees what the scanner found
// without asking.
type ToolChange struct {
	Tool       string               `json:"tool"`
	From       Status               `json:"from,omitempty"`
	To         Status               `json:"to"`
	WasPresent bool                 `json:"was_present"`
	Present    bool                 `json:"present"`
	Findings   []guardrails.Finding `json:"findings,omitempty"`
	Reason     string               `json:"reason,omitempty"`
}
