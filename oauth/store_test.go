package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/oauth2"

	"github.com/wardenmcp/warden/store"
)

// With a store key, a token and a client secret are never in the store in
// plaintext; a record written before, in plaintext, still reads and is
// sealed once the store is opened.
func TestRecordsSealedAndPlaintextStillReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: path, Key: "a test key, not a secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old, err := json.Marshal(&Record{Server: "old", ClientID: "c0", Token: &oauth2.Token{AccessToken: "OLD-ACCESS-5e1"}})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, func(tx store.Tx) error { return tx.Put(bucket, []byte("old"), old) })
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := openRecords(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if err := recs.put(&Record{Server: "new", ClientID: "c1", ClientSecret: "SECRET-9d2",
		Token: &oauth2.Token{AccessToken: "ACCESS-77a", RefreshToken: "REFRESH-c40"}}); err != nil {
		t.Fatal(err)
	}
	_, loaded, err := openRecords(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if r := loaded["new"]; r == nil || r.ClientSecret != "SECRET-9d2" || r.Token.RefreshToken != "REFRESH-c40" {
		t.Fatalf("the sealed record reads back as %+v", r)
	}
	if r := loaded["old"]; r == nil || r.Token.AccessToken != "OLD-ACCESS-5e1" {
		t.Fatalf("the plaintext record reads back as %+v", r)
	}
	err = st.View(ctx, func(tx store.Tx) error {
		v, err := tx.Get(bucket, []byte("old"))
		if !store.Sealed(v) {
			t.Errorf("the plaintext record was not sealed when the store was opened: %q", v)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"SECRET-9d2", "ACCESS-77a", "REFRESH-c40"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the store file holds %s in plaintext", secret)
		}
	}
}
