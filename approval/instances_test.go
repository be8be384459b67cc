package approval

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/store"
)

// twoStores are the ways to give two instances one store: each returns two
// handles on it (the same handle twice where a store is one process's).
var twoStores = map[string]func(t *testing.T) (a, b store.Store){
	// One bbolt handle: two registries in one process, concurrent only
	// through the store's transactions.
	"bolt": func(t *testing.T) (store.Store, store.Store) {
		st, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st, st
	},
	// Two PostgreSQL handles: two instances.
	"postgres": func(t *testing.T) (store.Store, store.Store) {
		url := pgtest.Start(t, pgtest.Options{}).URL()
		open := func(name string) store.Store {
			st, err := store.Open(context.Background(), store.Options{URL: url, Key: "a test key, not a secret", Instance: name})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		return open("a"), open("b")
	},
}

// twoRegistries are two instances' registries on one store, a having seen
// server s untrusted with tools t_0000.. before b opened.
func twoRegistries(t *testing.T, open func(t *testing.T) (a, b store.Store), tools int) (*Registry, *Registry) {
	t.Helper()
	sa, sb := open(t)
	a := openRegistry(t, sa)
	must[ApplyResult](t)(a.Apply("s", false, 1, inventory(tools, "t")))
	return a, openRegistry(t, sb)
}

func openRegistry(t *testing.T, st store.Store) *Registry {
	t.Helper()
	r, err := Open(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two instances decide on one server at once: a approves it while b, which
// loaded the server before, quarantines it. b's decision must wait for a's
// and apply to the record a left (still baselined, now quarantined).
// Without the reload in its transaction b writes over a with what it held
// (not baselined: fails on bolt); without the store lock b reads before a
// commits and a writes over b (not quarantined: fails on postgres).
func TestTwoInstancesDecideOneServerInTurn(t *testing.T) {
	for name, open := range twoStores {
		t.Run(name, func(t *testing.T) {
			a, b := twoRegistries(t, open, 3)

			wait := interleave(t, a, "s", func() {
				if err := b.Quarantine("s", "test"); err != nil {
					t.Error(err)
				}
			})
			must[Answer](t)(a.ApproveServer("s", ServerApproval{}))
			wait()

			got, ok := openRegistry(t, b.st).Server("s")
			if !ok || !got.Quarantined || got.QuarantinedBy != QuarantinedByOperator || !got.Baselined {
				t.Fatalf("stored state %+v: want quarantined by the operator and still baselined", got)
			}
			if st, _ := b.Server("s"); !st.Quarantined || !st.Baselined || st.Counts.Approved != 3 {
				t.Fatalf("b holds %+v: want what the store has", st)
			}
		})
	}
}

// Another instance's change reaches this one's memory and observers by the
// watch; a Resync reloads every server.
func TestAnotherInstancesChangeIsReloaded(t *testing.T) {
	for name, open := range twoStores {
		t.Run(name, func(t *testing.T) {
			a, b := twoRegistries(t, open, 2)
			var mu sync.Mutex
			var seen []Change
			b.OnChange(func(c Change) {
				mu.Lock()
				seen = append(seen, c)
				mu.Unlock()
			})

			must[Answer](t)(a.ApproveServer("s", ServerApproval{}))
			must[ApplyResult](t)(a.Apply("u", true, 1, inventory(1, "u")))
			if a.st == b.st { // one handle: a's events are b's own, so deliver them by hand
				b.remote(store.Event{Topic: topic, Msg: []byte("s"), Instance: "another"})
				b.remote(store.Event{Topic: topic, Resync: true})
			}
			testenv.WaitFor(t, 10*time.Second, "b to reload s and u", func() bool {
				sst, _ := b.Server("s")
				ust, _ := b.Server("u")
				return !sst.Quarantined && sst.Counts.Approved == 2 && ust.Counts.Approved == 1
			})
			if st, _ := check(b, "s", "t_0000"); st != StatusApproved {
				t.Fatalf("b checks t_0000 as %q", st)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 || seen[0].Server != "s" || seen[0].Cause != "sync" || !seen[0].VisibleChanged {
				t.Fatalf("b's observers saw %+v: want the approval of s as a sync change that changed what is visible", seen)
			}
		})
	}
}

// down is a store that cannot be reached for writes.
type down struct{ store.Store }

func (down) Update(context.Context, func(store.Tx) error) error {
	return fmt.Errorf("connect: %w", store.ErrUnavailable)
}

func (d down) Batch(ctx context.Context, fn func(store.Tx) error) error { return d.Update(ctx, fn) }

// With the store unreachable a decision fails with store.ErrUnavailable
// (the caller refuses with STORE_UNAVAILABLE) and changes nothing; what
// memory holds still answers.
func TestStoreUnavailableChangesNothing(t *testing.T) {
	ts := newStore(t)
	must[ApplyResult](t)(ts.r.Apply("s", false, 1, inventory(2, "t")))
	r := openRegistry(t, down{ts.db})
	if _, err := r.ApproveServer("s", ServerApproval{}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("ApproveServer: %v, want store.ErrUnavailable", err)
	}
	if _, err := r.Apply("s", false, 2, inventory(3, "t")); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Apply: %v, want store.ErrUnavailable", err)
	}
	if st, ok := r.Server("s"); !ok || !st.Quarantined || st.Counts.Pending != 2 {
		t.Fatalf("after the failures s is %+v: want it as it was", st)
	}
	if st, known := check(r, "s", "t_0000"); !known || st != StatusPending {
		t.Fatalf("Check: %q %v", st, known)
	}
}

// changeAfterLoad is a's store handle for an instance that opens while
// another instance (change) commits a change: right after the first View
// (Open's load), change runs, and View returns once this handle has handed
// the change's event to the watchers registered by then.
type changeAfterLoad struct {
	store.Store
	change func()
	once   sync.Once
}

func (s *changeAfterLoad) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := s.Store.View(ctx, fn); err != nil {
		return err
	}
	s.once.Do(func() {
		seen := make(chan struct{})
		var one sync.Once
		stop := s.Watch(topic, func(e store.Event) {
			if !e.Mine(s.Store) {
				one.Do(func() { close(seen) })
			}
		})
		defer stop()
		s.change()
		<-seen
	})
	return nil
}

// A change another instance commits while this one opens, after it read
// the records and before it followed the changes, is not lost.
func TestInstanceOpeningMissesNoChange(t *testing.T) {
	sa, sb := twoStores["postgres"](t)
	a := openRegistry(t, sa)
	must[ApplyResult](t)(a.Apply("s", false, 1, inventory(1, "t")))
	must[Answer](t)(a.ApproveServer("s", ServerApproval{}))
	b := openRegistry(t, &changeAfterLoad{Store: sb, change: func() {
		if err := a.Quarantine("s", "test"); err != nil {
			t.Error(err)
		}
	}})
	if !b.Quarantined("s") {
		t.Fatal("an instance that opened while another quarantined s does not see s quarantined")
	}
}
