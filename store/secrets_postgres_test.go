package store_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
)

// TestPostgresNeedsStoreKey: a shared store is refused without storeKey or
// with one too short to be a key, so that no secret reaches PostgreSQL
// unsealed; the database is a real one, so that without the check the open
// would succeed.
func TestPostgresNeedsStoreKey(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	for _, c := range []struct{ name, key, want string }{
		{"none", "", "needs storeKey"},
		{"short", "fifteen chars!!", "too short"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := store.Open(context.Background(), store.Options{URL: pg.NewDatabase(t), Key: c.key})
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "openssl rand") {
				t.Errorf("Open with storeKey %q: %v; want refused, %q and how to make a key", c.key, err, c.want)
			}
		})
	}
}

// TestPostgresSecretSealedAtRest: a secret put through the store is not in
// PostgreSQL's table in plaintext, in any row, whatever its bucket and key.
func TestPostgresSecretSealedAtRest(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	url := pg.NewDatabase(t)
	s := openPostgres(t, url)
	defer s.Close()
	const plain = "gho_plaintext-token-4711"
	err := s.Update(context.Background(), func(tx store.Tx) error {
		return tx.PutSecret("oauth/github", []byte("token"), []byte(plain))
	})
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, url)
	rows, _ := conn.Query(context.Background(), `select bucket || '/' || key || '=' || value from warden_kv`)
	dump, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil || len(dump) == 0 {
		t.Fatalf("the table: %d rows, %v; want the secret's", len(dump), err)
	}
	for _, row := range dump {
		if bytes.Contains(row, []byte(plain)) {
			t.Errorf("PostgreSQL keeps the secret in plaintext: %q", row)
		}
	}
	var opened []byte
	err = s.View(context.Background(), func(tx store.Tx) (err error) {
		opened, err = tx.GetSecret("oauth/github", []byte("token"))
		return err
	})
	if err != nil || string(opened) != plain {
		t.Errorf("the secret opens as %q, %v; want %q", opened, err, plain)
	}
}

// TestVerifySeesUnsealedSecret: Verify fails when a secret of the source is
// kept unsealed in a keyed destination, even though it reads the same,
// naming its bucket and key, never its value; Copy seals it again.
func TestVerifySeesUnsealedSecret(t *testing.T) {
	pg := pgtest.Start(t, pgtest.Options{})
	ctx := context.Background()
	const plain = "gho_plaintext-token-4711"
	from, to := openBolt(t, ""), openPG(t, pg.URL(), keyB)
	update(t, from, func(tx store.Tx) error { return tx.PutSecret("oauth", []byte("github"), []byte(plain)) })
	if _, err := store.Copy(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	update(t, to, func(tx store.Tx) error { return tx.Put("oauth", []byte("github"), []byte(plain)) })
	err := store.Verify(ctx, from, to)
	if err == nil || !strings.Contains(err.Error(), `bucket oauth, key "github": a secret stored unsealed`) || strings.Contains(err.Error(), plain) {
		t.Fatalf("Verify with the secret unsealed at the destination: %v; want it named, without its value", err)
	}
	if n, err := store.Copy(ctx, from, to); n != 1 || err != nil {
		t.Fatalf("Copy over the unsealed secret = %d, %v; want it sealed again", n, err)
	}
	if err := store.Verify(ctx, from, to); err != nil {
		t.Fatal(err)
	}
}
