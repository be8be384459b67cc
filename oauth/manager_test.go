package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/upstream"
)

// Many requests meet a 401 at once: one refresh, and the new token is in the
// store before any request carries it. When the refresh is refused, the
// request fails with ErrAuthRequired and the server needs a login.
func TestRefreshOnceStoredBeforeUse(t *testing.T) {
	db, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "db")})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var refreshes atomic.Int32
	var refuse atomic.Bool
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if refuse.Load() || r.PostForm.Get("refresh_token") != "R1" || r.PostForm.Get("resource") != "https://res" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		refreshes.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"A2","refresh_token":"R2","token_type":"Bearer","expires_in":3600}`))
	}))
	defer as.Close()
	var unstored atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer A2" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_ = db.View(context.Background(), func(tx store.Tx) error {
			var rec Record
			v, _ := tx.GetSecret(bucket, []byte("s"))
			if json.Unmarshal(v, &rec) != nil || rec.Token.AccessToken != "A2" || rec.Token.RefreshToken != "R2" {
				unstored.Add(1)
			}
			return nil
		})
	}))
	defer up.Close()

	cfg := &config.Server{Name: "s", URL: up.URL, Transport: config.TransportHTTP}
	st, _, err := openRecords(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.put(&Record{Server: "s", Fingerprint: cfg.Fingerprint(), ClientID: "c", TokenURL: as.URL, Resource: "https://res",
		AuthStyle: int(oauth2.AuthStyleInParams), Token: &oauth2.Token{AccessToken: "A1", RefreshToken: "R1", Expiry: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	m, err := Open(context.Background(), db, Options{}) // loads the record, as at a start
	if err != nil {
		t.Fatal(err)
	}
	rt := m.Transport(cfg, http.DefaultTransport)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, up.URL, nil)
			resp, err := rt.RoundTrip(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("request: %v %v", err, resp)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	if n := refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes; want 1", n)
	}
	if n := unstored.Load(); n != 0 {
		t.Errorf("%d requests carried a token not yet stored", n)
	}

	refuse.Store(true)
	m.mu.Lock()
	m.servers["s"].rec.Token.AccessToken = "A1" // as if A2 had been revoked: the upstream refuses A1
	revoked := *m.servers["s"].rec
	m.mu.Unlock()
	if err := st.put(&revoked); err != nil { // the refresh starts from the stored record
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, up.URL, nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, upstream.ErrAuthRequired) {
		t.Fatalf("after a refused refresh: %v; want ErrAuthRequired", err)
	}
	if need, _ := m.NeedsLogin("s"); !need {
		t.Fatal("not needs_login after a refused refresh")
	}
	if got := m.Status(cfg).State; got != StateNeedsLogin {
		t.Fatalf("state %q", got)
	}
}
