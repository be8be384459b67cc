package ui

import (
	"cmp"
	"slices"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
)

// reviewOrder sorts tools as a reviewer takes them: waiting ones with a
// high-severity finding first, then changed ones (a possible rug pull),
// pending, those held back, blocked, and the rest; tools no longer offered
// last; by name within each.
func reviewOrder(tools []api.Tool) {
	step := func(t api.Tool) int {
		switch {
		case !t.Present:
			return 6
		case t.HeldBack:
			return 3
		case api.Waiting(t) && api.Flagged(t):
			return 0
		case t.Status == approval.StatusChanged:
			return 1
		case t.Status == approval.StatusPending:
			return 2
		case t.Status == approval.StatusBlocked:
			return 4
		}
		return 5
	}
	slices.SortStableFunc(tools, func(a, b api.Tool) int { return cmp.Or(cmp.Compare(step(a), step(b)), cmp.Compare(a.Name, b.Name)) })
}

// approvable reports whether approving t by name can do anything: pin a
// pending or changed definition, or unblock a blocked tool. An invalid
// name can never be approved.
func approvable(t api.Tool) bool {
	return t.Present && (api.Waiting(t) || t.Status == approval.StatusBlocked)
}

// blockable reports whether blocking t changes anything.
func blockable(t api.Tool) bool {
	return t.Present && t.Status != approval.StatusBlocked && t.Status != approval.StatusInvalid
}

// byAll reports whether "approve all pending and changed" approves t: a
// waiting tool that was not held back and has no high-severity finding.
func byAll(t api.Tool) bool { return api.Waiting(t) && !t.HeldBack && !api.Flagged(t) }
