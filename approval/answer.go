package approval

import "slices"

// Answer is read back under the server's lock right after the commit, so it
// is what the store now holds. ApprovedCount and BlockedCount count the
// requested tools that ended approved or blocked; the rest is server-wide,
// over present tools.
type Answer struct {
	ApprovedCount int      `json:"approved_count"`
	BlockedCount  int      `json:"blocked_count"`
	StillPending  int      `json:"still_pending"`
	StillChanged  int      `json:"still_changed"`
	HeldTools     []string `json:"held_tools"`   // pending or changed, sorted, at most MaxHeldTools
	NotApproved   []string `json:"not_approved"` // requested to approve but not approved, sorted
	// HeldBack are the held tools an operator held back (ToolRecord.HeldBack),
	// sorted, at most MaxHeldTools: an approval of all tools passed them
	// over on purpose, and only naming them approves them.
	HeldBack []string `json:"held_back"`
	// Flagged are the held tools with a high-severity guardrails finding
	// (ToolRecord.Reason), sorted, at most MaxHeldTools: an approval of all
	// tools passes them over unless forced, so naming one approves it.
	Flagged []string `json:"flagged"`
	// Quarantined: the server is still quarantined, so even its approved
	// tools stay hidden until it is admitted.
	Quarantined bool `json:"quarantined"`
}

// MaxHeldTools bounds Answer.HeldTools.
const MaxHeldTools = 50

// answer reads the outcome back from the installed records. Caller holds s.mu.
func (s *server) answer(approved, blocked []string) Answer {
	a := Answer{HeldTools: []string{}, NotApproved: []string{}, HeldBack: []string{}, Flagged: []string{}, Quarantined: !s.hasMeta || s.meta.Quarantined}
	for _, name := range dedupe(approved) {
		if rec := s.tools[name]; rec != nil && rec.Status == StatusApproved {
			a.ApprovedCount++
		} else {
			a.NotApproved = append(a.NotApproved, name)
		}
	}
	for _, name := range dedupe(blocked) {
		if rec := s.tools[name]; rec != nil && rec.Status == StatusBlocked {
			a.BlockedCount++
		}
	}
	var held, heldBack, flagged []string
	for name, rec := range s.tools {
		if !rec.Present {
			continue
		}
		switch rec.Status {
		case StatusPending:
			a.StillPending++
		case StatusChanged:
			a.StillChanged++
		default:
			continue
		}
		held = append(held, name)
		if rec.HeldBack {
			heldBack = append(heldBack, name)
		}
		if rec.flagged() {
			flagged = append(flagged, name)
		}
	}
	a.HeldTools = append(a.HeldTools, firstNames(held)...)
	a.HeldBack = append(a.HeldBack, firstNames(heldBack)...)
	a.Flagged = append(a.Flagged, firstNames(flagged)...)
	return a
}

// firstNames sorts names and keeps the first MaxHeldTools.
func firstNames(names []string) []string {
	slices.Sort(names)
	return names[:min(len(names), MaxHeldTools)]
}

func set(names []string) map[string]struct{} {
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	return m
}

// dedupe returns the distinct names, sorted.
func dedupe(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
