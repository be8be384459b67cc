package ui

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
)

// newUI is a UI over api with a store of its own.
func newUI(t *testing.T, api http.Handler) *UI {
	t.Helper()
	return &UI{API: api, Store: openStore(t, filepath.Join(t.TempDir(), "warden.db"))}
}

func openStore(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: path, Key: "a test key, not a secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// csrfOf is the CSRF token of the session cookie c starts.
func csrfOf(t *testing.T, u *UI, c *http.Cookie) string {
	t.Helper()
	r, _ := http.NewRequest("GET", "/ui/", nil)
	r.AddCookie(c)
	s, err := u.session(r)
	if err != nil || s == nil {
		t.Fatalf("no session for the cookie: %v", err)
	}
	return s.CSRF
}

// expire makes code's expiry past.
func expire(t *testing.T, u *UI, code string) {
	t.Helper()
	past := binary.BigEndian.AppendUint64(nil, uint64(time.Now().Add(-time.Second).UnixNano()))
	err := u.Store.Update(context.Background(), func(tx store.Tx) error { return tx.Put(bucketCodes, storeKey(code), past) })
	if err != nil {
		t.Fatal(err)
	}
}

// A code minted by one instance logs in on another, and the cookie it
// gives works on the first; the store holds neither the code, the cookie
// nor the CSRF token in plaintext, and a flash set on one instance shows on
// the other.
func TestSessionWorksOnEveryInstance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "warden.db")
	st := openStore(t, path)
	one, two := &UI{API: &fakeAPI{}, Store: st}, &UI{API: &fakeAPI{}, Store: st}
	cs := []*http.Cookie{loginOn(t, one, two)}
	code, err := one.NewCode() // not spent: still in the store
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(one, "GET", "/ui/", cs[0].Value, nil); w.Code != http.StatusOK {
		t.Fatalf("one with two's cookie: %d", w.Code)
	}
	csrf := csrfOf(t, one, cs[0])
	r, _ := http.NewRequest("GET", "/ui/", nil)
	r.AddCookie(cs[0])
	s, _ := one.session(r)
	one.setFlash(s, &flash{OK: true, Message: "done-on-one"})
	if s, _ := two.session(r); s == nil || two.takeFlash(s) == nil {
		t.Fatal("two does not show the flash one set")
	}
	if s, _ := one.session(r); s == nil || s.Flash != nil {
		t.Fatal("the flash shows twice")
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, secret := range map[string]string{"code": code, "cookie": cs[0].Value, "csrf": csrf} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the store holds the %s in plaintext", name)
		}
	}
}

// Expired sessions and codes are removed when another login starts.
func TestExpiredSessionsAndCodesRemoved(t *testing.T) {
	u := newUI(t, &fakeAPI{})
	old := login(t, u)
	stale, _ := u.NewCode()
	expire(t, u, stale)
	r, _ := http.NewRequest("GET", "/ui/", nil)
	r.AddCookie(old)
	s, _ := u.session(r)
	s.Expires = time.Now().Add(-time.Second)
	if err := u.save(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	login(t, u)
	err := u.Store.View(context.Background(), func(tx store.Tx) error {
		if v, _ := tx.Get(bucketSessions, storeKey(old.Value)); v != nil {
			t.Error("the expired session is still in the store")
		}
		if v, _ := tx.Get(bucketCodes, storeKey(stale)); v != nil {
			t.Error("the expired code is still in the store")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// On PostgreSQL, two instances with their own handles: a cookie issued by
// one works on the other, and a code spent on one is spent for both.
func TestSessionAcrossPostgresInstances(t *testing.T) {
	url := pgtest.Start(t, pgtest.Options{}).URL()
	open := func(name string) *UI {
		st, err := store.Open(context.Background(), store.Options{URL: url, Key: "a test key, not a secret", Instance: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return &UI{API: &fakeAPI{}, Store: st}
	}
	one, two := open("one"), open("two")
	c := loginOn(t, one, two)
	if w := serve(one, "GET", "/ui/", c.Value, nil); w.Code != http.StatusOK {
		t.Fatalf("one with two's cookie: %d", w.Code)
	}
	code, err := one.NewCode()
	if err != nil {
		t.Fatal(err)
	}
	if w := serve(two, "GET", "/ui/login?code="+code, "", nil); w.Code != http.StatusOK {
		t.Fatalf("first use, on two: %d", w.Code)
	}
	if w := serve(one, "GET", "/ui/login?code="+code, "", nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("second use, on one: %d", w.Code)
	}
}
