package approval

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestApproveAllExcept(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	must[error](t)(nil, r.EnsureServer("large", false))
	inv := inventory(180, "read_customer_record")
	must[ApplyResult](t)(r.Apply("large", false, 1, inv))
	except := names(inv[100:115])
	ans := must[Answer](t)(r.ApproveTools("large", ToolApproval{All: true, Except: except}))
	want := Answer{ApprovedCount: 165, StillPending: 15, HeldTools: except, NotApproved: []string{}, Quarantined: true}
	if !equalAnswer(ans, want) {
		t.Fatalf("answer %+v", ans)
	}
	check := func(r *Registry, when string) {
		t.Helper()
		if c := statusCount(r, "large"); c[StatusApproved] != 165 || c[StatusPending] != 15 || len(c) != 2 {
			t.Fatalf("%s: counts %v", when, c)
		}
		if st, _ := r.Server("large"); st.Counts.Pending != 15 || st.Counts.HeldBack != 15 || st.Counts.Undecided() != 0 {
			t.Fatalf("%s: server counts %+v; want the 15 pending held back, none undecided", when, st.Counts)
		}
		for _, name := range except {
			if st, _ := check(r, "large", name); st != StatusPending {
				t.Fatalf("%s: %s is %s", when, name, st)
			}
		}
	}
	check(r, "after approval")
	r = ts.reopen()
	check(r, "after restart")
	ts.puts.Store(0)
	must[error](t)(nil, r.EnsureServer("large", false))                                      // reload
	must[ApplyResult](t)(r.Apply("large", false, 1, inventory(180, "read_customer_record"))) // reconnect
	check(r, "after reload and re-apply")
	if n := ts.puts.Load(); n != 0 {
		t.Fatalf("re-apply of the same inventory wrote %d records", n)
	}
	// A mistyped exception must not approve the tool it meant to spare.
	if _, err := r.ApproveTools("large", ToolApproval{All: true, Except: []string{"read_customer_record_01O0"}}); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("typo in except: %v", err)
	}
	check(r, "after refused typo")
}

func equalAnswer(a, b Answer) bool {
	return a.ApprovedCount == b.ApprovedCount && a.BlockedCount == b.BlockedCount &&
		a.StillPending == b.StillPending && a.StillChanged == b.StillChanged &&
		slices.Equal(a.HeldTools, b.HeldTools) && slices.Equal(a.NotApproved, b.NotApproved) && a.Quarantined == b.Quarantined
}

func TestApproveServer(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	var changes []Change
	r.OnChange(func(c Change) { changes = append(changes, c) })
	must[error](t)(nil, r.EnsureServer("x", false))
	inv := inventory(5, "t")
	must[ApplyResult](t)(r.Apply("x", false, 1, inv))
	reviewed := hashes(t, inv)
	delete(reviewed, "t_0004") // blocked below, needs no hash
	changes = nil
	ans := must[Answer](t)(r.ApproveServer("x", ServerApproval{ExpectedHashes: reviewed, Block: []string{"t_0004"}}))
	if !equalAnswer(ans, Answer{ApprovedCount: 4, BlockedCount: 1, HeldTools: []string{}, NotApproved: []string{}}) {
		t.Fatalf("answer %+v", ans)
	}
	if r.Quarantined("x") || status(t, r, "x", "t_0004") != StatusBlocked || statusCount(r, "x")[StatusApproved] != 4 {
		t.Fatal("server approval not applied")
	}
	if len(changes) != 1 || !changes[0].VisibleChanged || !changes[0].QuarantineChanged || len(changes[0].Tools) != 5 {
		t.Fatalf("changes %+v", changes)
	}
	r = ts.reopen()
	if r.Quarantined("x") || statusCount(r, "x")[StatusApproved] != 4 {
		t.Fatal("server approval lost in restart")
	}
	// Quarantine again: withheld, sticky against config, and lifted only by approval.
	must[error](t)(nil, r.Quarantine("x", "test"))
	must[error](t)(nil, r.EnsureServer("x", true))
	if !r.Quarantined("x") {
		t.Fatal("config lifted an operator quarantine")
	}
	must[Answer](t)(r.ApproveServer("x", ServerApproval{}))
	if r.Quarantined("x") {
		t.Fatal("approval did not lift quarantine")
	}
}

func TestNewToolSinceReviewStaysPending(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	must[error](t)(nil, r.EnsureServer("x", false))
	inv := inventory(3, "t")
	must[ApplyResult](t)(r.Apply("x", false, 1, inv))
	reviewed := hashes(t, inv)
	// The upstream adds a tool between the review and the approval.
	must[ApplyResult](t)(r.Apply("x", false, 2, append(inv, tool("sneaky", "added after review"))))
	ans := must[Answer](t)(r.ApproveServer("x", ServerApproval{ExpectedHashes: reviewed}))
	if !equalAnswer(ans, Answer{ApprovedCount: 3, StillPending: 1, HeldTools: []string{"sneaky"}, NotApproved: []string{}}) {
		t.Fatalf("answer %+v", ans)
	}
	if st, _ := check(r, "x", "sneaky"); st != StatusPending {
		t.Fatalf("new tool is %s", st)
	}
	// And a later pass does not baseline it either, even if the config now trusts the server.
	must[error](t)(nil, r.EnsureServer("x", true))
	must[ApplyResult](t)(r.Apply("x", true, 3, append(inv, tool("sneaky", "added after review"))))
	if st, _ := check(r, "x", "sneaky"); st != StatusPending {
		t.Fatalf("new tool is %s after trusted pass", st)
	}
}

func TestExpectedHashMismatchWritesNothing(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	must[error](t)(nil, r.EnsureServer("x", false))
	inv := inventory(4, "t")
	must[ApplyResult](t)(r.Apply("x", false, 1, inv))
	reviewed := hashes(t, inv)
	inv[2] = tool("t_0002", "changed after review")
	must[ApplyResult](t)(r.Apply("x", false, 2, inv))
	current := must[string](t)(Hash(inv[2]))

	before := ts.dump()
	ts.puts.Store(0)
	var calls int
	r.OnChange(func(Change) { calls++ })
	for name, op := range map[string]func() error{
		"server": func() error {
			_, err := r.ApproveServer("x", ServerApproval{ExpectedHashes: reviewed, Block: []string{"t_0003"}})
			return err
		},
		"tools": func() error {
			_, err := r.ApproveTools("x", ToolApproval{Tools: []string{"t_0001"}, ExpectedHashes: reviewed})
			return err
		},
		"all": func() error {
			_, err := r.ApproveTools("x", ToolApproval{All: true, ExpectedHashes: reviewed})
			return err
		},
	} {
		err := op()
		var hm *HashMismatchError
		if !errors.Is(err, ErrHashMismatch) || !errors.As(err, &hm) {
			t.Fatalf("%s: %v", name, err)
		}
		if len(hm.Mismatches) != 1 || hm.Mismatches[0] != (Mismatch{Tool: "t_0002", Expected: reviewed["t_0002"], Current: current}) {
			t.Fatalf("%s: mismatches %+v", name, hm.Mismatches)
		}
	}
	if string(ts.dump()) != string(before) || ts.puts.Load() != 0 || calls != 0 {
		t.Fatal("a refused approval wrote")
	}
	if !r.Quarantined("x") || statusCount(r, "x")[StatusPending] != 4 {
		t.Fatal("a refused approval changed memory")
	}
	// A named tool outside the review is refused too; a vanished reviewed tool is a mismatch.
	if _, err := r.ApproveTools("x", ToolApproval{Tools: []string{"t_0000"}, ExpectedHashes: map[string]string{}}); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("unreviewed tool: %v", err)
	}
	if _, err := r.ApproveServer("x", ServerApproval{ExpectedHashes: map[string]string{"gone": ""}}); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("unknown reviewed tool: %v", err)
	}
	if string(ts.dump()) != string(before) {
		t.Fatal("a refused approval wrote")
	}
}

func TestApproveChangedTool(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	inv := inventory(2, "t")
	must[ApplyResult](t)(r.Apply("fs", true, 1, inv))
	inv[0] = tool("t_0000", "v2")
	must[ApplyResult](t)(r.Apply("fs", true, 2, inv))
	// All approves changed tools too; the server approval does not.
	ans := must[Answer](t)(r.ApproveServer("fs", ServerApproval{}))
	if ans.StillChanged != 1 || !slices.Equal(ans.HeldTools, []string{"t_0000"}) {
		t.Fatalf("answer %+v", ans)
	}
	// Named in a server approval, a changed tool is reported as not approved.
	ans = must[Answer](t)(r.ApproveServer("fs", ServerApproval{ExpectedHashes: hashes(t, inv)}))
	if !slices.Equal(ans.NotApproved, []string{"t_0000"}) || ans.StillChanged != 1 {
		t.Fatalf("answer %+v, want t_0000 not approved and still changed", ans)
	}
	ans = must[Answer](t)(r.ApproveTools("fs", ToolApproval{All: true, ExpectedHashes: hashes(t, inv)}))
	if ans.ApprovedCount != 1 || ans.StillChanged != 0 {
		t.Fatalf("answer %+v", ans)
	}
	rec := r.Tools("fs")[0]
	if rec.Status != StatusApproved || rec.ApprovedBy != ApprovedByOperator || rec.ApprovedHash != must[string](t)(Hash(inv[0])) {
		t.Fatalf("record %+v", rec)
	}
}

func TestErrors(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	must[ApplyResult](t)(r.Apply("x", false, 1, inventory(2, "t")))
	for name, err := range map[string]error{
		"server approve": second(r.ApproveServer("nope", ServerApproval{})),
		"tools approve":  second(r.ApproveTools("nope", ToolApproval{All: true})),
		"block":          second(r.Block("nope", []string{"a"}, "test")),
		"quarantine":     r.Quarantine("nope", "test"),
	} {
		var us *UnknownServerError
		if !errors.Is(err, ErrUnknownServer) || !errors.As(err, &us) || us.Server != "nope" {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, err := range map[string]error{
		"approve": second(r.ApproveTools("x", ToolApproval{Tools: []string{"t_0000", "zz", "aa"}})),
		"block":   second(r.Block("x", []string{"zz"}, "test")),
		"server":  second(r.ApproveServer("x", ServerApproval{Block: []string{"zz"}})),
	} {
		var ut *UnknownToolError
		if !errors.Is(err, ErrUnknownTool) || !errors.As(err, &ut) || !slices.Contains(ut.Tools, "zz") {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, req := range []ToolApproval{{}, {All: true, Tools: []string{"t_0000"}}, {Tools: []string{"t_0000"}, Except: []string{"t_0001"}}} {
		if _, err := r.ApproveTools("x", req); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%+v: %v", req, err)
		}
	}
	if statusCount(r, "x")[StatusPending] != 2 || !r.Quarantined("x") {
		t.Fatal("a refused request changed state")
	}
	t.Log(second(r.ApproveTools("x", ToolApproval{Tools: []string{"zz"}})))
}

func second[T any](_ T, err error) error { return err }

func TestHeldToolsAreCapped(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	inv := inventory(180, "t")
	must[ApplyResult](t)(r.Apply("x", false, 1, inv))
	ans := must[Answer](t)(r.ApproveServer("x", ServerApproval{ExpectedHashes: map[string]string{}})) // reviewed nothing
	if ans.StillPending != 180 || len(ans.HeldTools) != MaxHeldTools || ans.HeldTools[0] != "t_0000" || r.Quarantined("x") {
		t.Fatalf("answer %+v", ans)
	}
}

// A tool left out of an approval of all tools (except) stays held through
// later approvals of everything, a server approval without a list and a
// restart; only naming it approves it (issue 12: admitting the server used
// to approve what the person had just held back).
func TestHeldBackStaysHeld(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	must[error](t)(nil, r.EnsureServer("everything", false))
	inv := inventory(4, "t")
	must[ApplyResult](t)(r.Apply("everything", false, 1, inv))
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	r.now = func() time.Time { return at }
	ans := must[Answer](t)(r.ApproveTools("everything", ToolApproval{All: true, Except: []string{"t_0003"}}))
	if !slices.Equal(ans.HeldBack, []string{"t_0003"}) {
		t.Fatalf("the answer does not name the tool held back: %+v", ans)
	}
	heldBack := func(r *Registry) ToolRecord {
		i := slices.IndexFunc(r.Tools("everything"), func(rec ToolRecord) bool { return rec.Name == "t_0003" })
		return r.Tools("everything")[i]
	}
	if rec := heldBack(r); !rec.HeldBack || !rec.HeldBackAt.Equal(at) {
		t.Fatalf("the excepted tool is not marked held back when it was: %v at %v", rec.HeldBack, rec.HeldBackAt)
	}
	r = ts.reopen()
	if rec := heldBack(r); !rec.HeldBack || !rec.HeldBackAt.Equal(at) {
		t.Fatalf("held back lost in a restart: %v at %v", rec.HeldBack, rec.HeldBackAt)
	}
	ans = must[Answer](t)(r.ApproveServer("everything", ServerApproval{}))
	if r.Quarantined("everything") || status(t, r, "everything", "t_0003") != StatusPending || ans.StillPending != 1 {
		t.Fatalf("server approval: answer %+v, t_0003 %s", ans, status(t, r, "everything", "t_0003"))
	}
	ans = must[Answer](t)(r.ApproveTools("everything", ToolApproval{All: true}))
	if status(t, r, "everything", "t_0003") != StatusPending || !slices.Equal(ans.HeldBack, []string{"t_0003"}) {
		t.Fatalf("an approval of all tools approved a tool held back earlier, or did not say why it left it: %+v", ans)
	}
	ans = must[Answer](t)(r.ApproveTools("everything", ToolApproval{Tools: []string{"t_0003"}}))
	if rec := heldBack(r); ans.ApprovedCount != 1 || rec.Status != StatusApproved || rec.HeldBack || !rec.HeldBackAt.IsZero() || len(ans.HeldBack) != 0 {
		t.Fatalf("naming the tool: answer %+v, record %+v", ans, rec)
	}
}

// EnsureServers records every server as EnsureServer does one: a trusted
// one admitted, an untrusted one quarantined, an "untrusted" quarantine
// lifted by trust, an operator's kept; each change is told, and kept.
func TestEnsureServers(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	must[error](t)(nil, r.EnsureServers(map[string]bool{"lifted": false, "operator": true}))
	must[error](t)(nil, r.Quarantine("operator", "test"))
	var changed []string
	r.OnChange(func(c Change) { changed = append(changed, c.Server) })
	must[error](t)(nil, r.EnsureServers(map[string]bool{"trusted": true, "untrusted": false, "lifted": true, "operator": true}))
	if !slices.Equal(changed, []string{"lifted", "trusted", "untrusted"}) {
		t.Fatalf("changes told for %v", changed)
	}
	for _, r := range []*Registry{r, ts.reopen()} {
		for server, want := range map[string]bool{"trusted": false, "untrusted": true, "lifted": false, "operator": true} {
			if r.Quarantined(server) != want {
				t.Fatalf("%s quarantined: %v, want %v", server, !want, want)
			}
		}
	}
	if err := ts.r.EnsureServers(map[string]bool{"a": true, "": true}); err == nil {
		t.Fatal("an empty server name was recorded")
	}
}
