package approval

import (
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/guardrails"
)

// ApplyResult says what one discovery pass did. Name lists are sorted.
type ApplyResult struct {
	Stale          bool     `json:"stale"`    // older than an applied inventory: nothing written
	Baseline       bool     `json:"baseline"` // this pass was the server's baseline
	New            []string `json:"new,omitempty"`
	Changed        []string `json:"changed,omitempty"`  // approved tools whose definition now differs
	Restored       []string `json:"restored,omitempty"` // approved again: reverted, or back with the approved hash
	Gone           []string `json:"gone,omitempty"`     // no longer in the inventory
	Written        int      `json:"written"`            // tool records written
	VisibleChanged bool     `json:"visible_changed"`
	// Pins are the listed tools' hashes (Hash), by name, for Check.
	Pins map[string]string `json:"-"`
}

// parallelHashMin is the number of tools per extra hashing goroutine.
const parallelHashMin = 128

// entry is one inventory tool, hashed once per pass. scan is its
// definition's guardrails findings when the pass found it new or changed
// (nil: the records already had it).
type entry struct {
	name string
	hash string
	def  json.RawMessage
	ann  *mcp.ToolAnnotations
	scan []guardrails.Finding
}

// Apply is the one path by which the registry learns a server's tools
// (connect, reconnect, list_changed, reload, refresh). tools is a complete
// inventory already fetched: the lock is never held across network I/O.
//
// seq orders inventories: the caller takes it, increasing per server, before
// it starts fetching. A pass with seq <= the last applied one writes nothing
// and reports Stale. Seqs live in memory only; a new process accepts seq 1.
//
// Under the server's lock (this process's and the store's), in one
// transaction, against the records as the store has them: a trusted, unquarantined
// server without a baseline decision is baselined (its pending and new tools
// approved by "baseline", the decision stored even for no tools); otherwise
// new tools are pending. A tool with a high-severity guardrails finding
// stays pending even in a baseline, its record saying why (Reason); every
// definition is scanned when first seen or changed, outside the lock, and
// its findings stored with the record. An approved tool whose hash differs becomes changed
// and is approved again when the hash returns; pending and blocked tools keep
// their status. A tool whose name is outside the MCP character set is held
// as invalid (NameProblem), baseline or not. Tools missing from the
// inventory keep their record, marked not present. Records that did not
// change are not rewritten.
func (r *Registry) Apply(server string, trusted bool, seq uint64, tools []*mcp.Tool) (ApplyResult, error) {
	if server == "" {
		return ApplyResult{}, invalid("empty server name")
	}
	s := r.serverFor(server)
	inv, err := hashInventory(server, tools, s.view.Load().has)
	if err != nil {
		return ApplyResult{}, err
	}
	s.lock()
	res, chs, err := r.applyLocked(s, trusted, seq, inv)
	s.unlock()
	r.notify(chs...)
	if err == nil && !res.Stale {
		res.Pins = make(map[string]string, len(inv))
		for _, e := range inv {
			res.Pins[e.name] = e.hash
		}
	}
	return res, err
}

// hashInventory hashes every tool once and scans the definitions that
// known (the records as last published) does not have (outside any lock,
// spread over the CPUs for large inventories), and rejects inventories with
// empty or duplicate names, which would make the pin ambiguous.
func hashInventory(server string, tools []*mcp.Tool, known func(name, hash string) bool) ([]entry, error) {
	inv := make([]entry, len(tools))
	errs := make([]error, len(tools))
	hashRange := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			h, def, err := hashTool(tools[i])
			inv[i], errs[i] = entry{hash: h, def: def}, err
			if err == nil && !known(tools[i].Name, h) {
				inv[i].scan = scanDefinition(def)
			}
		}
	}
	if workers := min(runtime.GOMAXPROCS(0), len(tools)/parallelHashMin); workers > 1 {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { hashRange(w*len(tools)/workers, (w+1)*len(tools)/workers) })
		}
		wg.Wait()
	} else {
		hashRange(0, len(tools))
	}
	seen := make(map[string]struct{}, len(tools))
	for i, t := range tools {
		if err := errs[i]; err != nil {
			return nil, fmt.Errorf("%w: server %q: %v", ErrInvalidInventory, server, err)
		}
		if t.Name == "" {
			return nil, fmt.Errorf("%w: server %q listed a tool without a name", ErrInvalidInventory, server)
		}
		if _, dup := seen[t.Name]; dup {
			return nil, fmt.Errorf("%w: server %q listed tool %q twice", ErrInvalidInventory, server, t.Name)
		}
		seen[t.Name] = struct{}{}
		inv[i].name, inv[i].ann = t.Name, cloneAnnotations(t.Annotations)
	}
	return inv, nil
}

// cloneAnnotations copies a tool's annotations; nothing set is nil, as in the
// hashed definition (and as a record reads back from the store).
func cloneAnnotations(a *mcp.ToolAnnotations) *mcp.ToolAnnotations {
	if a == nil || *a == (mcp.ToolAnnotations{}) {
		return nil
	}
	c := *a
	if a.DestructiveHint != nil {
		v := *a.DestructiveHint
		c.DestructiveHint = &v
	}
	if a.OpenWorldHint != nil {
		v := *a.OpenWorldHint
		c.OpenWorldHint = &v
	}
	return &c
}

// applyLocked decides and commits one pass. Caller holds s.mu.
func (r *Registry) applyLocked(s *server, trusted bool, seq uint64, inv []entry) (ApplyResult, []*Change, error) {
	if seq <= s.lastSeq {
		return ApplyResult{Stale: true}, nil, nil
	}
	now := r.now()
	var res ApplyResult
	chs, err := r.commit(s, "discovery", func() (change, error) {
		var c change
		res, c = s.pass(trusted, inv, now)
		return c, nil
	})
	if err != nil {
		return ApplyResult{}, chs, err
	}
	s.lastSeq = seq
	s.lastPass.Store(now.UnixNano())
	if len(chs) > 0 && chs[len(chs)-1].Cause == "discovery" {
		res.VisibleChanged = chs[len(chs)-1].VisibleChanged
	}
	return res, chs, nil
}

// pass decides one inventory against s's meta and records as they are now:
// what it did and what to write (only what changed). Caller holds s.mu.
func (s *server) pass(trusted bool, inv []entry, now time.Time) (ApplyResult, change) {
	var res ApplyResult
	meta, metaDirty := s.meta, false
	if !s.hasMeta {
		meta, metaDirty = initialMeta(trusted, now), true
	}
	baseline := trusted && !meta.Quarantined && !meta.Baselined
	if baseline {
		meta.Baselined, meta.BaselineBy, meta.BaselineAt = true, ApprovedByBaseline, now
		metaDirty = true
	}
	res.Baseline = baseline

	var out []*ToolRecord
	inInv := make(map[string]struct{}, len(inv))
	for i := range inv {
		e := &inv[i]
		inInv[e.name] = struct{}{}
		old := s.tools[e.name]
		rec := nextRecord(s.name, old, e, baseline, now)
		if rec == nil {
			continue
		}
		out = append(out, rec)
		switch {
		case old == nil:
			res.New = append(res.New, e.name)
		case rec.Status == StatusChanged && (old.Status != StatusChanged || !old.Present):
			res.Changed = append(res.Changed, e.name)
		case rec.Status == StatusApproved && old.Status != StatusPending && (old.Status != StatusApproved || !old.Present):
			res.Restored = append(res.Restored, e.name)
		}
	}
	for name, old := range s.tools {
		if _, ok := inInv[name]; ok || !old.Present {
			continue
		}
		rec := *old
		rec.Present = false
		out = append(out, &rec)
		res.Gone = append(res.Gone, name)
	}
	c := change{recs: out}
	if metaDirty {
		c.meta = &meta
	}
	res.Written = len(out)
	slices.Sort(res.New)
	slices.Sort(res.Changed)
	slices.Sort(res.Restored)
	slices.Sort(res.Gone)
	return res, c
}

// initialMeta is a server's state when first seen: an untrusted server is
// quarantined, a trusted one is not.
func initialMeta(trusted bool, now time.Time) serverMeta {
	if trusted {
		return serverMeta{}
	}
	return serverMeta{Quarantined: true, QuarantinedBy: QuarantinedUntrusted, QuarantinedAt: now}
}

// nextRecord applies one inventory entry to a record. It returns nil when
// nothing but LastSeen would change. A baseline approves a pending tool
// unless it has a high-severity finding.
func nextRecord(server string, old *ToolRecord, e *entry, baseline bool, now time.Time) *ToolRecord {
	if old == nil {
		rec := &ToolRecord{Server: server, Name: e.name, Status: StatusPending, Present: true,
			CurrentHash: e.hash, Current: e.def, Annotations: e.ann, FirstSeen: now, LastSeen: now}
		rec.Findings = findingsOf(rec, e.scan)
		if !holdInvalid(rec) && baseline && !rec.flagged() {
			approve(rec, ApprovedByBaseline, now)
		}
		rec.Reason = holdReason(rec, baseline)
		return rec
	}
	rec := *old
	rec.Present = true
	redefined := rec.CurrentHash != e.hash
	if redefined {
		rec.CurrentHash, rec.Current, rec.Annotations = e.hash, e.def, e.ann
	}
	switch rec.Status {
	case StatusApproved, StatusChanged:
		if rec.CurrentHash == rec.ApprovedHash {
			rec.Status = StatusApproved
		} else {
			rec.Status = StatusChanged
		}
	}
	if redefined {
		rec.Findings = findingsOf(&rec, e.scan)
	}
	if rec.Status == StatusPending && baseline && !rec.flagged() {
		approve(&rec, ApprovedByBaseline, now)
	} // blocked stays blocked; invalid stays invalid: the name cannot change
	// A held tool keeps the reason it was first held for (a baseline's)
	// until its definition changes.
	if why := holdReason(&rec, baseline); why == "" || rec.Reason == "" || redefined {
		rec.Reason = why
	}
	if sameState(old, &rec) {
		return nil
	}
	rec.LastSeen = now
	return &rec
}

// approve pins the record's current definition as approved.
func approve(rec *ToolRecord, by string, now time.Time) {
	rec.Status = StatusApproved
	rec.ApprovedHash, rec.Approved = rec.CurrentHash, rec.Current
	rec.ApprovedBy, rec.ApprovedAt = by, now
	rec.Findings, rec.Reason = approvedFindings(rec.Findings), ""
	rec.release()
}
