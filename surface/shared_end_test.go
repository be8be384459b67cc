package surface

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/store"
)

// A session's end waits for a read-modify-write of its record under the
// record's lock (touchSession's) that read it before the end: otherwise
// the write puts the ended session back, and any instance adopts it again.
func TestEndWaitsForATouch(t *testing.T) {
	url := pgtest.Start(t, pgtest.Options{}).URL()
	st, err := store.Open(context.Background(), store.Options{URL: url, Key: "a key for the tests, long enough"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := &view{surface: "mcp", st: st, log: slog.New(slog.DiscardHandler)}
	const id = "S1"
	k := sessionKey(v.surface, id)
	if err := st.Update(t.Context(), func(tx store.Tx) error { return tx.Put(sessionsBucket, k, []byte(`{"used":"2026-12-07T00:00:00Z"}`)) }); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	err = st.Update(t.Context(), func(tx store.Tx) error {
		if err := tx.Lock(string(k)); err != nil {
			return err
		}
		b, err := tx.Get(sessionsBucket, k)
		if err != nil || b == nil {
			t.Fatalf("the record before the end: %q, %v", b, err)
		}
		go func() { v.endShared(st, id); close(ended) }()
		select { // the end, taking the lock, waits for this commit
		case <-ended:
		case <-time.After(300 * time.Millisecond):
		}
		return tx.Put(sessionsBucket, k, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	<-ended
	if v.recorded(id) {
		t.Fatal("the session's record is back after its end")
	}
}
