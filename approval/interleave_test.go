package approval

import (
	"sync/atomic"
	"testing"
	"time"
)

// During the first Apply on server that reaches the hook, interleave runs op
// while the pass sits between its read and its write. op gets up to 200ms to
// finish: with the per-server lock it cannot, because it waits for the pass,
// so it runs after the pass's write; without the lock it finishes inside the
// window and the pass then writes over it. The returned func waits for op.
func interleave(t *testing.T, r *Registry, server string, op func()) func() {
	t.Helper()
	var fired atomic.Bool
	done := make(chan struct{})
	r.testHookAfterRead = func(s string) {
		if s != server || !fired.CompareAndSwap(false, true) {
			return
		}
		go func() { defer close(done); op() }()
		select {
		case <-done:
		case <-time.After(200 * time.Millisecond):
		}
	}
	return func() {
		t.Helper()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("interleaved operation never finished")
		}
		if !fired.Load() {
			t.Fatal("hook never fired")
		}
	}
}

// A pass that took its inventory under the old (untrusted) config must not
// overwrite the baseline a fresher pass made after the config trusted the
// server.
func TestInterleaveStalePassVsFreshBaseline(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	inv := inventory(20, "t")
	must[error](t)(nil, r.EnsureServer("s", false))
	wait := interleave(t, r, "s", func() {
		if err := r.EnsureServer("s", true); err != nil { // reload: now trusted
			t.Error(err)
		}
		if _, err := r.Apply("s", true, 2, inv); err != nil { // the fresh pass
			t.Error(err)
		}
	})
	must[ApplyResult](t)(r.Apply("s", false, 1, inv)) // the older, non-baseline pass
	wait()
	check := func(r *Registry, when string) {
		t.Helper()
		if r.Quarantined("s") {
			t.Fatalf("%s: quarantined", when)
		}
		for _, rec := range r.Tools("s") {
			if rec.Status != StatusApproved || rec.ApprovedBy != ApprovedByBaseline {
				t.Fatalf("%s: baseline overwritten: %s is %s", when, rec.Name, rec.Status)
			}
		}
		if c := statusCount(r, "s"); c[StatusApproved] != 20 {
			t.Fatalf("%s: counts %v", when, c)
		}
	}
	check(r, "after both passes")
	check(ts.reopen(), "after restart")
}

// A pass that writes a pending tool back as pending (its definition moved)
// must not revert an operator approval that landed while it was deciding.
func TestInterleavePendingWriteBackVsApproval(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	inv := inventory(20, "t")
	must[error](t)(nil, r.EnsureServer("s", false))
	must[ApplyResult](t)(r.Apply("s", false, 1, inv))
	var ans Answer
	wait := interleave(t, r, "s", func() {
		var err error
		ans, err = r.ApproveServer("s", ServerApproval{})
		if err != nil {
			t.Error(err)
		}
	})
	inv2 := inventory(20, "t")
	for i := range 5 {
		inv2[i] = tool(inv2[i].Name, "reworded description")
	}
	must[ApplyResult](t)(r.Apply("s", false, 2, inv2))
	wait()
	check := func(r *Registry, when string) {
		t.Helper()
		if r.Quarantined("s") {
			t.Fatalf("%s: quarantined", when)
		}
		for _, rec := range r.Tools("s") {
			if rec.Status != StatusApproved || rec.ApprovedHash != rec.CurrentHash {
				t.Fatalf("%s: approval reverted: %s is %s", when, rec.Name, rec.Status)
			}
		}
	}
	check(r, "after pass and approval")
	if ans.ApprovedCount != 20 || ans.StillPending != 0 {
		t.Fatalf("answer %+v", ans)
	}
	check(ts.reopen(), "after restart")
}

// A server quarantined while a pass is in flight must stay quarantined: the
// pass must not auto-baseline it back into service.
func TestInterleaveQuarantineVsBaseline(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	inv := inventory(20, "t")
	must[error](t)(nil, r.EnsureServer("s", true))
	wait := interleave(t, r, "s", func() {
		if err := r.Quarantine("s", "test"); err != nil {
			t.Error(err)
		}
	})
	must[ApplyResult](t)(r.Apply("s", true, 1, inv))
	wait()
	check := func(r *Registry, when string) {
		t.Helper()
		st, _ := r.Server("s")
		if !st.Quarantined || st.QuarantinedBy != QuarantinedByOperator {
			t.Fatalf("%s: quarantine lost: %+v", when, st)
		}
	}
	check(r, "after pass")
	r = ts.reopen()
	check(r, "after restart")
	must[ApplyResult](t)(r.Apply("s", true, 1, inv))
	check(r, "after a later pass")
}

// The same race without a hook: quarantined before the pass takes the lock,
// a trusted server's pass records pending tools and decides no baseline.
func TestQuarantinedTrustedServerIsNotBaselined(t *testing.T) {
	ts := newStore(t)
	r := ts.r
	must[error](t)(nil, r.EnsureServer("s", true))
	must[error](t)(nil, r.Quarantine("s", "test"))
	res := must[ApplyResult](t)(r.Apply("s", true, 1, inventory(3, "t")))
	if res.Baseline || statusCount(r, "s")[StatusPending] != 3 {
		t.Fatalf("quarantined server baselined: %+v", res)
	}
	must[Answer](t)(r.ApproveServer("s", ServerApproval{}))
	must[ApplyResult](t)(r.Apply("s", true, 2, append(inventory(3, "t"), tool("late", "x"))))
	if statusCount(r, "s")[StatusApproved] != 3 || status(t, r, "s", "late") != StatusPending {
		t.Fatal("approval or later pass wrong")
	}
}
