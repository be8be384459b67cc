package approval

import (
	"github.com/wardenmcp/warden/decisions"
	"maps"
	"slices"
	"time"
)

// ServerApproval admits a quarantined server. ExpectedHashes binds the
// approval to the reviewed definitions (tool -> current_hash as shown); nil
// means "approve whatever is pending now", an empty map approves no tool.
type ServerApproval struct {
	ExpectedHashes map[string]string `json:"expected_hashes,omitempty"`
	Block          []string          `json:"block,omitempty"`
	By             string            `json:"-"` // the operator deciding, as records name them
}

// ToolApproval approves tools by name (Tools) or every pending and changed
// tool (All) except some. With ExpectedHashes every named tool must be in it
// and every entry must match; under All a tool not in it stays held. All
// passes over tools with a high-severity guardrails finding unless Force.
type ToolApproval struct {
	Tools          []string          `json:"tools,omitempty"`
	All            bool              `json:"all,omitempty"`
	Except         []string          `json:"except,omitempty"`
	ExpectedHashes map[string]string `json:"expected_hashes,omitempty"`
	Force          bool              `json:"force,omitempty"`
	By             string            `json:"-"` // the operator deciding, as records name them
}

// EnsureServer records a configured server on config load. An untrusted
// server with no record starts quarantined; a trusted one never is: its
// "untrusted" quarantine is lifted when the config makes it trusted. An
// operator's quarantine stays until an operator approves the server.
func (r *Registry) EnsureServer(server string, trusted bool) error {
	return r.EnsureServers(map[string]bool{server: trusted})
}

// EnsureServers is EnsureServer for each server (name → trusted), written in
// one transaction: at start, one fsync instead of one per server.
func (r *Registry) EnsureServers(servers map[string]bool) error {
	names := slices.Sorted(maps.Keys(servers))
	if slices.Contains(names, "") {
		return invalid("empty server name")
	}
	locked := make([]*server, len(names))
	for i, name := range names { // in name order; nothing else holds two servers
		locked[i] = r.serverFor(name)
		locked[i].lock()
	}
	now := r.now()
	chs, err := r.update(locked, "config", func() ([]change, error) {
		cs := make([]change, len(names))
		for i, s := range locked {
			switch trusted := servers[s.name]; {
			case !s.hasMeta:
				m := initialMeta(trusted, now)
				cs[i].meta = &m
			case trusted && s.meta.Quarantined && s.meta.QuarantinedBy == QuarantinedUntrusted:
				m := s.meta
				m.Quarantined, m.QuarantinedBy, m.QuarantinedAt = false, "", now
				cs[i].meta = &m
			}
		}
		return cs, nil
	})
	for _, s := range locked {
		s.unlock()
	}
	r.notify(chs...)
	return err
}

// Quarantine withholds all of a server's tools until ApproveServer. It is
// sticky: neither config nor discovery lifts it. by is the operator.
func (r *Registry) Quarantine(server, by string) error {
	s, err := r.locked(server)
	if err != nil {
		return err
	}
	now := r.now()
	chs, err := r.commit(s, "quarantine", func() (change, error) {
		if s.meta.Quarantined && s.meta.QuarantinedBy == QuarantinedByOperator {
			return change{}, nil
		}
		m := s.meta
		m.Quarantined, m.QuarantinedBy, m.QuarantinedAt, m.DecidedBy = true, QuarantinedByOperator, now, by
		return change{meta: &m, decision: &decisions.Decision{At: now, Operator: by, Action: decisions.Quarantine, Server: server}}, nil
	})
	s.unlock()
	r.notify(chs...)
	return err
}

// ApproveServer admits a server in one transaction under its lock: expected
// hashes are re-checked against the current ones (any mismatch: nothing
// written, *HashMismatchError), the reviewed pending tools are approved (those
// in ExpectedHashes, else all present pending ones not held back), the Block
// tools blocked,
// the quarantine lifted and the baseline decision stored. A tool that appeared
// after the review stays pending; changed tools stay changed (ApproveTools).
// Without ExpectedHashes, a tool with a high-severity guardrails finding
// stays pending too: only naming it approves it.
func (r *Registry) ApproveServer(server string, req ServerApproval) (Answer, error) {
	s, err := r.locked(server)
	if err != nil {
		return Answer{}, err
	}
	return r.decide(s, "approve", decisions.Admit, req.By, req.Block, func(now time.Time) ([]string, change, error) { return s.approveServer(req, now) })
}

// approveServer decides a server approval: the tools it approves and what
// to write. Caller holds s.mu.
func (s *server) approveServer(req ServerApproval, now time.Time) ([]string, change, error) {
	if err := s.known(req.Block); err != nil {
		return nil, change{}, err
	}
	if err := s.refuseInvalid("blocked", req.Block); err != nil {
		return nil, change{}, err
	}
	if err := s.refuseInvalid("approved", slices.Collect(maps.Keys(req.ExpectedHashes))); err != nil {
		return nil, change{}, err
	}
	if err := s.checkHashes(req.ExpectedHashes, nil); err != nil {
		return nil, change{}, err
	}
	blocked := set(req.Block)
	var targets []string
	if req.ExpectedHashes != nil {
		for name := range req.ExpectedHashes {
			if _, b := blocked[name]; !b {
				targets = append(targets, name)
			}
		}
	} else {
		for name, rec := range s.tools {
			if _, b := blocked[name]; !b && rec.Present && rec.Status == StatusPending && !rec.HeldBack && !rec.flagged() {
				targets = append(targets, name)
			}
		}
	}
	var out []*ToolRecord
	for _, name := range targets {
		if old := s.tools[name]; old.Status == StatusPending {
			rec := *old
			approve(&rec, ApprovedByOperator, now)
			rec.DecidedBy = req.By
			out = append(out, &rec)
		}
	}
	out = append(out, s.blockRecords(req.Block, req.By)...)
	m := s.meta
	m.Quarantined, m.QuarantinedBy, m.AdmittedAt, m.DecidedBy = false, "", now, req.By
	if !m.Baselined {
		m.Baselined, m.BaselineBy, m.BaselineAt = true, ApprovedByOperator, now
	}
	return targets, change{meta: &m, recs: out}, nil
}

// ApproveTools approves tools by name, or all pending and changed present
// tools except some, pinning their current definitions. Naming a blocked
// tool unblocks it; All never does. The Except tools of All are marked held
// back, and All passes over tools held back earlier: the person said no to
// them, so only naming them approves them. All passes over tools with a
// high-severity guardrails finding too, unless Force. Unknown names in Tools or Except
// are an error (a mistyped exception must not approve the tool it meant to
// spare).
func (r *Registry) ApproveTools(server string, req ToolApproval) (Answer, error) {
	switch {
	case req.All && len(req.Tools) > 0:
		return Answer{}, invalid("give either tool names or all, not both")
	case !req.All && len(req.Tools) == 0:
		return Answer{}, invalid("name the tools to approve, or set all")
	case !req.All && len(req.Except) > 0:
		return Answer{}, invalid("except only applies with all")
	}
	s, err := r.locked(server)
	if err != nil {
		return Answer{}, err
	}
	return r.decide(s, "approve", decisions.Approve, req.By, nil, func(now time.Time) ([]string, change, error) { return s.approveTools(req, now) })
}

// approveTools decides a tool approval: the tools it approves and what to
// write. Caller holds s.mu.
func (s *server) approveTools(req ToolApproval, now time.Time) ([]string, change, error) {
	if err := s.known(append(slices.Clone(req.Tools), req.Except...)); err != nil {
		return nil, change{}, err
	}
	if err := s.refuseInvalid("approved", req.Tools); err != nil {
		return nil, change{}, err
	}
	var targets, holdBack []string
	if req.All {
		except := set(req.Except)
		for name, rec := range s.tools {
			if !rec.Present || (rec.Status != StatusPending && rec.Status != StatusChanged) {
				continue
			}
			if _, x := except[name]; x {
				if !rec.HeldBack {
					holdBack = append(holdBack, name)
				}
				continue
			}
			if rec.HeldBack || (rec.flagged() && !req.Force) {
				continue
			}
			if _, reviewed := req.ExpectedHashes[name]; req.ExpectedHashes != nil && !reviewed {
				continue // appeared after the review: stays held
			}
			targets = append(targets, name)
		}
		if err := s.checkHashes(req.ExpectedHashes, nil); err != nil {
			return nil, change{}, err
		}
	} else {
		targets = req.Tools
		if err := s.checkHashes(req.ExpectedHashes, targets); err != nil {
			return nil, change{}, err
		}
	}
	var out []*ToolRecord
	for _, name := range dedupe(targets) {
		old := s.tools[name]
		if old.Status == StatusApproved {
			continue
		}
		rec := *old
		approve(&rec, ApprovedByOperator, now)
		rec.DecidedBy = req.By
		out = append(out, &rec)
	}
	for _, name := range holdBack {
		rec := *s.tools[name]
		rec.holdBack(now)
		out = append(out, &rec)
	}
	return targets, change{recs: out}, nil
}

// Block blocks tools by name: they stay blocked, whatever their definition,
// until an operator approves them by name. by is the operator.
func (r *Registry) Block(server string, tools []string, by string) (Answer, error) {
	if len(tools) == 0 {
		return Answer{}, invalid("name the tools to block")
	}
	s, err := r.locked(server)
	if err != nil {
		return Answer{}, err
	}
	return r.decide(s, "block", decisions.Block, by, tools, func(time.Time) ([]string, change, error) {
		if err := s.known(tools); err != nil {
			return nil, change{}, err
		}
		if err := s.refuseInvalid("blocked", tools); err != nil {
			return nil, change{}, err
		}
		return nil, change{recs: s.blockRecords(tools, by)}, nil
	})
}

// decide commits an operator's decision on s (locked by the caller;
// unlocked on return) and answers it: fn says which tools it approves and
// what to write; blocked are the tools it blocks. The decision is recorded
// as action by the operator by, with the tools it approved and blocked.
func (r *Registry) decide(s *server, cause, action, by string, blocked []string, fn func(now time.Time) ([]string, change, error)) (Answer, error) {
	now := r.now()
	var approved []string
	chs, err := r.commit(s, cause, func() (c change, err error) {
		if approved, c, err = fn(now); err == nil && !c.empty() {
			c.decision = decisionOf(c.recs, decisions.Decision{At: now, Operator: by, Action: action, Server: s.name})
		}
		return c, err
	})
	var ans Answer
	if err == nil {
		ans = s.answer(approved, blocked)
	}
	s.unlock()
	r.notify(chs...)
	return ans, err
}

// decisionOf is d with the tools recs approve and block.
func decisionOf(recs []*ToolRecord, d decisions.Decision) *decisions.Decision {
	for _, rec := range recs {
		switch {
		case rec.Status == StatusApproved:
			d.Approved = append(d.Approved, rec.Name)
		case rec.Status == StatusBlocked:
			d.Blocked = append(d.Blocked, rec.Name)
		}
	}
	slices.Sort(d.Approved)
	slices.Sort(d.Blocked)
	return &d
}

// locked returns a known server with its lock held.
func (r *Registry) locked(server string) (*server, error) {
	s := r.lookup(server)
	if s == nil {
		return nil, &UnknownServerError{Server: server}
	}
	s.lock()
	if !s.hasMeta {
		s.unlock()
		return nil, &UnknownServerError{Server: server}
	}
	return s, nil
}

// known fails with *UnknownToolError for names without a record. Caller
// holds s.mu.
func (s *server) known(names []string) error {
	var unknown []string
	for _, n := range names {
		if _, ok := s.tools[n]; !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return &UnknownToolError{Server: s.name, Tools: dedupe(unknown)}
	}
	return nil
}

// checkHashes compares the reviewed hashes with the current ones, and
// requires every name in mustCover to have been reviewed. Caller holds s.mu.
func (s *server) checkHashes(expected map[string]string, mustCover []string) error {
	if expected == nil {
		return nil
	}
	var mm []Mismatch
	for name, want := range expected {
		cur := ""
		rec := s.tools[name]
		if rec != nil {
			cur = rec.CurrentHash
		}
		if rec == nil || cur != want {
			mm = append(mm, Mismatch{Tool: name, Expected: want, Current: cur})
		}
	}
	for _, name := range dedupe(mustCover) {
		if _, ok := expected[name]; !ok {
			mm = append(mm, Mismatch{Tool: name, Current: s.tools[name].CurrentHash})
		}
	}
	if len(mm) == 0 {
		return nil
	}
	slices.SortFunc(mm, func(a, b Mismatch) int {
		if a.Tool < b.Tool {
			return -1
		}
		if a.Tool > b.Tool {
			return 1
		}
		return 0
	})
	return &HashMismatchError{Server: s.name, Mismatches: mm}
}

// blockRecords returns the records to write to block names (known). Caller
// holds s.mu.
func (s *server) blockRecords(names []string, by string) []*ToolRecord {
	var out []*ToolRecord
	for _, name := range dedupe(names) {
		if old := s.tools[name]; old.Status != StatusBlocked {
			rec := *old
			rec.Status, rec.DecidedBy, rec.Reason = StatusBlocked, by, ""
			rec.release()
			out = append(out, &rec)
		}
	}
	return out
}
