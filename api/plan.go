package api

import (
	"slices"

	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/guardrails"
)

// Waiting reports whether a tool waits for review: present, and pending or
// changed since approved.
func Waiting(t Tool) bool {
	return t.Present && (t.Status == approval.StatusPending || t.Status == approval.StatusChanged)
}

// Admission is what admitting a quarantined server (POST
// /v1/servers/{s}/approve) does to its waiting tools, for showing before it
// is done; the CLI and the review page both show this.
type Admission struct {
	Approve  []Tool // pending: approved
	HeldBack []Tool // pending but held back: stay pending until named
	Flagged  []Tool // pending with a high-severity finding: stay pending until named
	Changed  []Tool // changed since approved: stay held until reviewed
}

// Flagged reports whether t has a high-severity guardrails finding:
// approving all passes over it unless forced (t.Reason says so).
func Flagged(t Tool) bool { return len(guardrails.HighRules(t.Findings)) > 0 }

// PlanAdmission sorts tools as admission with block treats them, in the
// order given; blocked tools are in none of the lists.
func PlanAdmission(tools []Tool, block []string) Admission {
	var a Admission
	for _, t := range tools {
		switch {
		case !Waiting(t) || slices.Contains(block, t.Name):
		case t.Status == approval.StatusChanged:
			a.Changed = append(a.Changed, t)
		case t.HeldBack:
			a.HeldBack = append(a.HeldBack, t)
		case Flagged(t):
			a.Flagged = append(a.Flagged, t)
		default:
			a.Approve = append(a.Approve, t)
		}
	}
	return a
}
