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
	// Quarantined: the server is still quarantined, so even its approved
	// tools stay hidden until it is admitted.
	Quarantined bool `json:"quarantined"`
}

// MaxHeldTools bounds Answer.HeldTools.
const MaxHeldTools = 50

// answer reads the outcome back from the installed records. Caller holds s.mu.
func (s *server) answer(approved, blocked []string) Answer {
	a := Answer{HeldTools: []string{}, NotApproved: []string{}, Quarantined: !s.hasMeta || s.meta.Quarantined}
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
	var held []string
	for name, rec := range s.tools {
		if !rec.Present {
			continue
		}
		switch rec.Status {
		case StatusPending:
			a.StillPending++
			held = append(held, name)
		case StatusChanged:
			a.StillChanged++
			held = append(held, name)
		}
	}
	slices.Sort(held)
	if len(held) > MaxHeldTools {
		held = held[:MaxHeldTools]
	}
	a.HeldTools = append(a.HeldTools, held...)
	return a
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
