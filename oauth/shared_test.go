package oauth

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/store"
)

// Two instances on one PostgreSQL meet a 401 at once: one refresh grant
// reaches the authorization server (which rotates refresh tokens), the
// other instance waits for it and uses the token it stored, and neither
// needs a login. Each follows the other's logout and login without a call.
func TestInstancesRefreshOnce(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	e := newEnvOn(t, openStore(t, store.Options{URL: pg.URL()}))
	e.login()
	other := e.openOn(openStore(t, store.Options{URL: pg.URL()}))
	conn, err := pgx.Connect(t.Context(), pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	e.as.ExpireAccess()
	held := make(chan struct{}, 4)
	release := e.as.HoldRefresh(held)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	call := func(i int, m *Manager) {
		wg.Go(func() {
			resp, err := e.callWith(m)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = errors.New(resp.Status)
			}
			errs[i] = err
		})
	}
	call(0, e.m)
	<-held // the first instance's grant is at the authorization server
	call(1, other)
	// The second waits for the first: for its lock, or (unlocked) at the
	// authorization server too.
	testenv.WaitFor(t, 10*time.Second, "the second refresh waiting", func() bool {
		var waiting int
		_ = conn.QueryRow(t.Context(), `select count(*) from pg_locks where locktype = 'advisory' and not granted`).Scan(&waiting)
		return waiting > 0 || len(held) > 0
	})
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d's call after the token expired: %v", i+1, err)
		}
	}
	if n, refused := e.as.Refreshes(), e.as.RefusedRefreshes(); n != 1 || refused != 0 {
		t.Errorf("%d refresh grants served and %d refused; want 1 and 0", n, refused)
	}
	for i, m := range []*Manager{e.m, other} {
		if info := m.Status(e.cfg); info.State != StateAuthorized || !info.Refreshable {
			t.Errorf("instance %d after the refresh: %+v", i+1, info)
		}
	}

	if _, err := e.m.Logout(context.Background(), e.cfg); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the other instance to follow the logout", func() bool {
		need, _ := other.NeedsLogin(e.cfg.Name)
		return need
	})
	e.login()
	testenv.WaitFor(t, 10*time.Second, "the other instance to follow the login", func() bool {
		need, _ := other.NeedsLogin(e.cfg.Name)
		return !need
	})
	if resp, err := e.callWith(other); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the other instance's call after the login: %v %v", resp, err)
	}
	if n := e.as.Refreshes(); n != 1 {
		t.Fatalf("%d refresh grants; want the other instance to use the new login's token as it is", n)
	}
}

// Alone on the embedded store, a refresh waiting for a slow authorization
// server does not hold the store's one writer: other writes go on.
func TestRefreshLeavesTheEmbeddedStoreFree(t *testing.T) {
	e := newEnv(t)
	e.login()
	e.as.ExpireAccess()
	held := make(chan struct{}, 1)
	release := e.as.HoldRefresh(held)
	done := make(chan error, 1)
	go func() {
		resp, err := e.callWith(e.m)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
		done <- err
	}()
	<-held // the grant is at the authorization server
	wrote := make(chan error, 1)
	go func() {
		wrote <- e.m.store.st.Update(context.Background(), func(tx store.Tx) error { return tx.Put("other", []byte("k"), []byte("v")) })
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Error("a write waited for a refresh's grant")
		defer func() { <-wrote }()
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("the call after the refresh: %v", err)
	}
	if n := e.as.Refreshes(); n != 1 {
		t.Errorf("%d refresh grants; want 1", n)
	}
}
