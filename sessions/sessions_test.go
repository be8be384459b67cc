package sessions

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenmcp/warden/store"
)

func open(t *testing.T, path string) (*Store, store.Store) {
	return openAs(t, path, "one")
}

func openAs(t *testing.T, path, owner string) (*Store, store.Store) {
	t.Helper()
	db, err := store.Open(t.Context(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), db, owner)
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

func TestRecordsSurviveReopenAndMatchTheirFingerprint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	s, db := open(t, path)
	rec := Record{Server: "up", Fingerprint: "fp1", SessionID: "0123456789abcdef", ProtocolVersion: "2025-11-25",
		InitResult: json.RawMessage(`{"protocolVersion":"2025-11-25"}`), Created: time.Now().UTC()}
	if err := s.Save(rec, "fresh"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, db = open(t, path)
	got, ok := s.Load("up", "fp1")
	if !ok || got.SessionID != rec.SessionID || !bytes.Equal(got.InitResult, rec.InitResult) {
		t.Fatalf("after reopen Load = %+v, %v", got, ok)
	}
	if _, ok := s.Load("up", "fp2"); ok {
		t.Fatal("a record made for another URL or transport must not be resumed")
	}
	list := s.List()
	if len(list) != 1 || list[0].SessionPrefix != "01234567…" || list[0].Mode != "stored" {
		t.Fatalf("List = %+v: want the id cut to a prefix and mode stored", list)
	}
	s.MarkResumed("up")
	if s.List()[0].Mode != "resumed" {
		t.Fatal("MarkResumed not shown")
	}
	if err := s.Delete("up"); err != nil {
		t.Fatal(err)
	}
	if len(s.Servers()) != 0 {
		t.Fatal("Delete kept the record")
	}
	db.Close()
	s, db = open(t, path)
	defer db.Close()
	if _, ok := s.Load("up", "fp1"); ok {
		t.Fatal("a deleted record came back after reopen")
	}
}

func TestRecordsAreNotResumedByAnotherInstance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	s, db := openAs(t, path, "one")
	if err := s.Save(Record{Server: "up", Fingerprint: "fp", SessionID: "sid"}, "fresh"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	other, db := openAs(t, path, "two")
	if _, ok := other.Load("up", "fp"); ok || len(other.Servers()) != 0 {
		t.Fatal("instance two sees instance one's upstream session")
	}
	db.Close()
	s, db = openAs(t, path, "one")
	defer db.Close()
	if _, ok := s.Load("up", "fp"); !ok {
		t.Fatal("instance one lost its own session across a restart")
	}
}

// A record of the versions before, keyed by server alone, is resumed after
// the upgrade.
func TestRecordOfTheVersionsBeforeAdopted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := store.Open(t.Context(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := json.Marshal(Record{Server: "up", Fingerprint: "fp", SessionID: "sid-before"})
	if err := db.Update(t.Context(), func(tx store.Tx) error { return tx.Put(legacyBucket, []byte("up"), old) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, db := open(t, path)
	defer db.Close()
	if r, ok := s.Load("up", "fp"); !ok || r.SessionID != "sid-before" {
		t.Fatalf("Load = %+v, %v: want the record from before", r, ok)
	}
}

// A record is stored sealed under the store's key, the session id nowhere
// in what the store holds; one a version before kept in plaintext is
// sealed at Open.
func TestRecordsAreSealed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := store.Open(t.Context(), store.Options{Path: path, Key: "the sessions test's store key"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before, _ := json.Marshal(Record{Server: "old", Fingerprint: "fp", SessionID: "sid-in-plaintext"})
	bucket := legacyBucket + "/one"
	if err := db.Update(t.Context(), func(tx store.Tx) error { return tx.Put(bucket, []byte("old"), before) }); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), db, "one")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(Record{Server: "new", Fingerprint: "fp", SessionID: "sid-saved-now"}, "fresh"); err != nil {
		t.Fatal(err)
	}
	err = db.View(t.Context(), func(tx store.Tx) error {
		for server, id := range map[string]string{"old": "sid-in-plaintext", "new": "sid-saved-now"} {
			raw, err := tx.Get(bucket, []byte(server))
			if err != nil || raw == nil || !store.Sealed(raw) || bytes.Contains(raw, []byte(id)) {
				t.Errorf("%s's record as stored: %q, %v; want it sealed", server, raw, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err = Open(t.Context(), db, "one")
	if err != nil {
		t.Fatal(err)
	}
	for server, id := range map[string]string{"old": "sid-in-plaintext", "new": "sid-saved-now"} {
		if r, ok := s.Load(server, "fp"); !ok || r.SessionID != id {
			t.Errorf("%s after reopening: %+v, %v", server, r, ok)
		}
	}
}
