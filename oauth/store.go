// Package oauth authorizes Warden to HTTP upstreams that require OAuth 2.1,
// as the MCP authorization spec describes, with a person in the loop: an
// agent's call never starts a login. A server that refuses Warden for want of
// a token is marked needs_login until a person runs warden auth login; the
// login (discovery, client registration, PKCE, the code exchange) is the Go
// SDK's auth.AuthorizationCodeHandler, with Warden's own listener as the
// redirect URI. Tokens and client registrations live in the store, never in
// logs, events, API answers or errors. A refreshed token is stored before it
// is used, and concurrent 401s of one server refresh once, across the
// instances sharing the store too: a refresh holds the server's lock and
// starts from the stored record, and every instance follows the records
// the others change.
package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/oauth2"

	"github.com/wardenmcp/warden/store"
)

const bucket = "upstream_auth"

// topic announces, with the server's name, a change of its record: every
// instance reloads it (see Manager.changed).
const topic = "oauth"

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

// records keeps Records in the store, sealed (Tx.PutSecret: they hold the
// token and the client secret). Records written before, in plaintext, still
// read, and are written again as secrets when the store is opened, so that
// a storeKey set later, or a copy to a shared store, seals them. Every
// write is committed (and synced) before it returns, so a token is never
// used before it is durable.
type records struct{ st store.Store }

func openRecords(ctx context.Context, st store.Store) (*records, map[string]*Record, error) {
	recs := map[string]*Record{}
	err := st.Update(ctx, func(tx store.Tx) error {
		clear(recs) // fn may run again
		var keys [][]byte
		err := tx.Scan(bucket, nil, false, func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			raw, err := tx.Get(bucket, k)
			if err != nil {
				return err
			}
			raw = bytes.Clone(raw)
			v, err := tx.GetSecret(bucket, k)
			if err != nil {
				return err
			}
			if bytes.Equal(v, raw) { // written before it was a secret
				if err := tx.PutSecret(bucket, k, v); err != nil {
					return err
				}
			}
			if r := decodeRecord(v); r != nil {
				recs[string(k)] = r
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("oauth store: %w", err)
	}
	return &records{st}, recs, nil
}

// decodeRecord is a stored record; nil if it has no token or cannot be read.
func decodeRecord(v []byte) *Record {
	var r Record
	if json.Unmarshal(v, &r) != nil || r.Token == nil {
		return nil
	}
	return &r
}

// getRecord reads server's record in tx; nil if there is none.
func getRecord(tx store.Tx, server string) (*Record, error) {
	v, err := tx.GetSecret(bucket, []byte(server))
	if v == nil || err != nil {
		return nil, err
	}
	return decodeRecord(v), nil
}

// loadAll reads every stored record, by server.
func (s *records) loadAll(ctx context.Context) (map[string]*Record, error) {
	recs := map[string]*Record{}
	err := s.st.View(ctx, func(tx store.Tx) error {
		clear(recs)
		return tx.Scan(bucket, nil, false, func(k, _ []byte) error {
			r, err := getRecord(tx, string(k))
			if r != nil {
				recs[string(k)] = r
			}
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("oauth store: %w", err)
	}
	return recs, nil
}

// load reads server's stored record; nil if there is none.
func (s *records) load(ctx context.Context, server string) (r *Record, err error) {
	err = s.st.View(ctx, func(tx store.Tx) error {
		r, err = getRecord(tx, server)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("oauth store: load %s: %w", server, err)
	}
	return r, nil
}

// putRecord stores r in tx and announces the change to every instance.
func putRecord(tx store.Tx, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := tx.PutSecret(bucket, []byte(r.Server), b); err != nil {
		return err
	}
	return tx.Publish(topic, []byte(r.Server))
}

// lockName is the lock a change of server's record holds, so that a
// refresh on one instance and a logout or login on another do not undo
// each other.
func lockName(server string) string { return "oauth/" + server }

func (s *records) put(r *Record) error {
	err := s.st.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Lock(lockName(r.Server)); err != nil {
			return err
		}
		return putRecord(tx, r)
	})
	if err != nil {
		return fmt.Errorf("oauth store: save %s: %w", r.Server, err)
	}
	return nil
}

func (s *records) delete(server string) error {
	err := s.st.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Lock(lockName(server)); err != nil {
			return err
		}
		if err := tx.Delete(bucket, []byte(server)); err != nil {
			return err
		}
		return tx.Publish(topic, []byte(server))
	})
	if err != nil {
		return fmt.Errorf("oauth store: delete %s: %w", server, err)
	}
	return nil
}
