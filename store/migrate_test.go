package store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/wardenmcp/warden/store"
)

func openBolt(t *testing.T, key string, old ...string) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db"), Key: key, OldKeys: old})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func update(t *testing.T, st store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := st.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

const (
	keyA = "first key, sixteen or more"
	keyB = "second key, sixteen or more"
)

// Copy moves every record, nested buckets too; a secret kept unsealed at
// the source is sealed at the destination; a second Copy writes nothing;
// Verify sees a difference.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	from, to := openBolt(t, ""), openBolt(t, keyB)
	update(t, from, func(tx store.Tx) error {
		for _, kv := range [][3]string{{"servers", "github", "{}"}, {"tools/github", "create_issue", `{"state":"approved"}`}, {"tools/memory", "read", "x"}} {
			if err := tx.Put(kv[0], []byte(kv[1]), []byte(kv[2])); err != nil {
				return err
			}
		}
		return tx.PutSecret("oauth", []byte("github"), []byte("token-s3cret"))
	})
	n, err := store.Copy(ctx, from, to)
	if err != nil || n != 4 {
		t.Fatalf("Copy: %d records, %v; want 4", n, err)
	}
	if err := store.Verify(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	_ = to.View(ctx, func(tx store.Tx) error {
		raw, _ := tx.Get("oauth", []byte("github"))
		if bytes.Contains(raw, []byte("token-s3cret")) || !store.Sealed(raw) {
			t.Errorf("the token is kept as %q at the destination; want it sealed", raw)
		}
		if v, err := tx.GetSecret("oauth", []byte("github")); err != nil || string(v) != "token-s3cret" {
			t.Errorf("the token reads %q, %v", v, err)
		}
		return nil
	})
	if n, err := store.Copy(ctx, from, to); err != nil || n != 0 {
		t.Fatalf("a second Copy wrote %d records (%v); want none", n, err)
	}
	update(t, to, func(tx store.Tx) error { return tx.Put("tools/memory", []byte("read"), []byte("y")) })
	if err := store.Verify(ctx, from, to); err == nil {
		t.Fatal("Verify found no difference after a record changed")
	}
}

// Rekey seals every secret under the new key; the old key alone then
// opens none of them.
func TestRekey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "warden.db")
	open := func(key string, old ...string) store.Store {
		st, err := store.Open(ctx, store.Options{Path: path, Key: key, OldKeys: old})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open(keyA)
	update(t, st, func(tx store.Tx) error { return tx.PutSecret("oauth", []byte("s"), []byte("tok")) })
	st.Close()

	st = open(keyB, keyA)
	if n, err := store.Rekey(ctx, st); err != nil || n != 1 {
		t.Fatalf("Rekey: %d, %v; want 1", n, err)
	}
	if n, err := store.Rekey(ctx, st); err != nil || n != 0 {
		t.Fatalf("a second Rekey: %d, %v; want 0", n, err)
	}
	st.Close()

	st = open(keyA)
	defer st.Close()
	_ = st.View(ctx, func(tx store.Tx) error {
		if _, err := tx.GetSecret("oauth", []byte("s")); err == nil {
			t.Error("the old key still opens a secret after Rekey")
		}
		return nil
	})
}
