// Package oauth authorizes Warden to HTTP upstreams that require OAuth 2.1,
// as the MCP authorization spec describes, with a person in the loop: an
// agent's call never starts a login. A server that refuses Warden for want of
// a token is marked needs_login until a person runs warden auth login; the
// login (discovery, client registration, PKCE, the code exchange) is the Go
// SDK's auth.AuthorizationCodeHandler, with Warden's own listener as the
// redirect URI. Tokens and client registrations live in the store, never in
// logs, events, API answers or errors. A refreshed token is stored before it
// is used, and concurrent 401s of one server refresh once.
package oauth

import (
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
	"golang.org/x/oauth2"
)

var bucket = []byte("upstream_auth")

// Record is one server's authorization: the client it registered as, the
// endpoints, and the current token.
type Record struct {
	Server       string        `json:"server"`
	Fingerprint  string        `json:"fingerprint"` // the server URL's, see config.Server.Fingerprint
	Issuer       string        `json:"issuer,omitempty"`
	ClientID     string        `json:"client_id"`
	ClientSecret string        `json:"client_secret,omitempty"`
	Registered   bool          `json:"registered,omitempty"` // the client came from dynamic registration
	AuthURL      string        `json:"auth_url"`
	TokenURL     string        `json:"token_url"`
	AuthStyle    int           `json:"auth_style"`
	RevokeURL    string        `json:"revoke_url,omitempty"`
	RedirectURL  string        `json:"redirect_url"`
	Resource     string        `json:"resource,omitempty"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
	Authorized   time.Time     `json:"authorized"`
	Refreshed    time.Time     `json:"refreshed,omitzero"`
}

func (r *Record) config() *oauth2.Config {
	return &oauth2.Config{ClientID: r.ClientID, ClientSecret: r.ClientSecret, RedirectURL: r.RedirectURL, Scopes: r.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: r.AuthURL, TokenURL: r.TokenURL, AuthStyle: oauth2.AuthStyle(r.AuthStyle)}}
}

// store keeps records in bbolt. Every write is committed (and synced) before
// it returns, so a token is never used before it is durable.
type store struct{ db *bbolt.DB }

func openStore(db *bbolt.DB) (*store, map[string]*Record, error) {
	recs := map[string]*Record{}
	err := db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			var r Record
			if json.Unmarshal(v, &r) == nil && r.Token != nil {
				recs[string(k)] = &r
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("oauth store: %w", err)
	}
	return &store{db}, recs, nil
}

func (s *store) put(r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put([]byte(r.Server), b) })
}

func (s *store) delete(server string) error {
	return s.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Delete([]byte(server)) })
}
