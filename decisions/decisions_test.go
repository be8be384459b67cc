package decisions

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenmcp/warden/store"
)

func open(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db"), Instance: "a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func record(t *testing.T, st store.Store, d Decision) {
	t.Helper()
	if err := st.Update(context.Background(), func(tx store.Tx) error { return Record(tx, st, d) }); err != nil {
		t.Fatal(err)
	}
}

// Decisions list newest first, by server when asked, stamped with the
// instance; the oldest go past the bound.
func TestRecordAndList(t *testing.T) {
	st := open(t)
	old := maxEntries
	maxEntries = 3
	t.Cleanup(func() { maxEntries = old })
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for i, server := range []string{"gh", "fs", "gh", "gh"} {
		record(t, st, Decision{At: at.Add(time.Duration(i) * time.Minute), Operator: fmt.Sprint("op", i), Action: Approve, Server: server})
	}
	all, err := List(context.Background(), st, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range all {
		got = append(got, d.Operator+"/"+d.Server+"/"+d.Instance)
	}
	if fmt.Sprint(got) != "[op3/gh/a op2/gh/a op1/fs/a]" {
		t.Errorf("list: %v; want the last three, newest first, on instance a", got)
	}
	gh, err := List(context.Background(), st, "gh", 1)
	if err != nil || len(gh) != 1 || gh[0].Operator != "op3" {
		t.Errorf("gh's latest: %+v, %v", gh, err)
	}
}

// A decision whose transaction fails is not recorded.
func TestRecordCommitsWithTheDecision(t *testing.T) {
	st := open(t)
	fail := fmt.Errorf("the decision failed")
	err := st.Update(context.Background(), func(tx store.Tx) error {
		if err := Record(tx, st, Decision{Operator: "rita", Action: Block, Server: "gh"}); err != nil {
			return err
		}
		return fail
	})
	if err != fail {
		t.Fatal(err)
	}
	if ds, err := List(context.Background(), st, "", 10); err != nil || len(ds) != 0 {
		t.Errorf("after a failed decision: %+v, %v", ds, err)
	}
}
