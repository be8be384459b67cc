package store_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
)

// openPG opens the store at url with key and old keys; closed at the
// test's end.
func openPG(t *testing.T, url, key string, old ...string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{URL: url, Key: key, OldKeys: old})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func readSecret(t *testing.T, s store.Store) (plain, raw []byte) {
	t.Helper()
	err := s.View(context.Background(), func(tx store.Tx) error {
		p, err := tx.GetSecret("tokens", []byte("github"))
		if err != nil {
			return err
		}
		r, err := tx.Get("tokens", []byte("github"))
		plain, raw = bytes.Clone(p), bytes.Clone(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return plain, raw
}

// TestCopyBoltToPostgres: an embedded store copies into PostgreSQL whole
// (nested buckets, keys with 0x00 and 0xff, a bucket name that is not
// UTF-8, an empty value, a secret sealed anew under PostgreSQL's key), a
// second Copy writes nothing, and Verify sees a later difference.
func TestCopyBoltToPostgres(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	ctx := context.Background()
	from, to := openBolt(t, keyA), openPG(t, pg.URL(), keyB)
	update(t, from, func(tx store.Tx) error {
		for _, b := range []string{"tools", "tools/github", "tools/github/x", "activity", "z\xff"} {
			for _, k := range [][]byte{{0x00}, []byte("a"), {0xff, 0xff}} {
				if err := tx.Put(b, k, append([]byte(b), k...)); err != nil {
					return err
				}
			}
		}
		if err := tx.Put("empty-value", []byte("k"), nil); err != nil {
			return err
		}
		return tx.PutSecret("tokens", []byte("github"), []byte("the-token"))
	})
	if err := store.Verify(ctx, from, to); err == nil {
		t.Fatal("Verify before the copy: no difference")
	}
	if n, err := store.Copy(ctx, from, to); err != nil || n != 5*3+2 {
		t.Fatalf("Copy = %d, %v; want 17 records", n, err)
	}
	if err := store.Verify(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	if plain, raw := readSecret(t, to); string(plain) != "the-token" || bytes.Contains(raw, plain) {
		t.Errorf("the copied secret opens as %q; stored sealed: %v", plain, !bytes.Contains(raw, plain))
	}
	if n, err := store.Copy(ctx, from, to); n != 0 || err != nil {
		t.Errorf("the second Copy = %d, %v; want nothing written", n, err)
	}
	update(t, to, func(tx store.Tx) error { return tx.Put("tools/github", []byte("a"), []byte("changed")) })
	if err := store.Verify(ctx, from, to); err == nil {
		t.Error("Verify after a change: no difference")
	}
}

// TestRekeyPostgres: a secret sealed under the old key is sealed again under
// the new one, once; then the old key is not needed.
func TestRekeyPostgres(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	ctx := context.Background()
	old, err := store.Open(ctx, store.Options{URL: pg.URL(), Key: keyA})
	if err != nil {
		t.Fatal(err)
	}
	update(t, old, func(tx store.Tx) error { return tx.PutSecret("tokens", []byte("github"), []byte("the-token")) })
	_, before := readSecret(t, old)
	old.Close()
	rotating := openPG(t, pg.URL(), keyB, keyA)
	if n, err := store.Rekey(ctx, rotating); n != 1 || err != nil {
		t.Fatalf("Rekey = %d, %v; want the one secret sealed again", n, err)
	}
	if plain, after := readSecret(t, rotating); string(plain) != "the-token" || bytes.Equal(before, after) {
		t.Errorf("after Rekey the secret is %q, sealed anew: %v", plain, !bytes.Equal(before, after))
	}
	if n, err := store.Rekey(ctx, rotating); n != 0 || err != nil {
		t.Errorf("the second Rekey = %d, %v; want nothing", n, err)
	}
	if plain, _ := readSecret(t, openPG(t, pg.URL(), keyB)); string(plain) != "the-token" {
		t.Errorf("with the new key alone the secret is %q", plain)
	}
}
