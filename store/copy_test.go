package store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/store/storetest"
)

const otherKey = "another-store-key-fedcba9876543210"

func openBolt(t *testing.T, key string) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db"), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPostgresWith(t *testing.T, o store.Options) store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fill puts keys in nested buckets, 0xff bytes included, and one secret.
func fill(t *testing.T, s store.Store) {
	t.Helper()
	err := s.Update(context.Background(), func(tx store.Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
}

func secret(t *testing.T, s store.Store) (plain, raw []byte) {
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

// TestCopyBoltToPostgres: a copy is equal, byte for byte, sealed values
// included, and a second copy writes nothing.
func TestCopyBoltToPostgres(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	from := openBolt(t, storetest.Key)
	fill(t, from)
	to := openPostgresWith(t, store.Options{URL: pg.URL(), Key: storetest.Key})
	ctx := context.Background()
	if err := store.Verify(ctx, from, to); err == nil {
		t.Fatal("Verify before the copy: no difference")
	}
	n, err := store.Copy(ctx, from, to)
	if err != nil || n != 5*3+2 {
		t.Fatalf("Copy = %d, %v; want 17 keys", n, err)
	}
	if err := store.Verify(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	if plain, _ := secret(t, to); string(plain) != "the-token" {
		t.Errorf("the copied secret opens as %q", plain)
	}
	if n, err := store.Copy(ctx, from, to); n != 0 || err != nil {
		t.Errorf("the second Copy = %d, %v; want nothing written", n, err)
	}
	err = to.Update(ctx, func(tx store.Tx) error { return tx.Put("tools/github", []byte("a"), []byte("changed")) })
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Verify(ctx, from, to); err == nil {
		t.Error("Verify after a change: no difference")
	}
}

// TestRekey: a copy into a store with a new key still opens under the old
// one; Rekey re-seals it under the new key, once, after which the old key
// is not needed.
func TestRekey(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	from := openBolt(t, storetest.Key)
	fill(t, from)
	ctx := context.Background()
	rotating := openPostgresWith(t, store.Options{URL: pg.URL(), Key: otherKey, OldKeys: []string{storetest.Key}})
	if _, err := store.Copy(ctx, from, rotating); err != nil {
		t.Fatal(err)
	}
	_, before := secret(t, rotating)
	n, err := store.Rekey(ctx, rotating)
	if n != 1 || err != nil {
		t.Fatalf("Rekey = %d, %v; want the one secret re-sealed", n, err)
	}
	plain, after := secret(t, rotating)
	if string(plain) != "the-token" || bytes.Equal(before, after) {
		t.Errorf("after Rekey the secret is %q, sealed anew: %v", plain, !bytes.Equal(before, after))
	}
	if n, err := store.Rekey(ctx, rotating); n != 0 || err != nil {
		t.Errorf("the second Rekey = %d, %v; want nothing", n, err)
	}
	newOnly := openPostgresWith(t, store.Options{URL: pg.URL(), Key: otherKey})
	if plain, _ := secret(t, newOnly); string(plain) != "the-token" {
		t.Errorf("with the new key alone the secret is %q", plain)
	}
}
