// Package sessions persists streamable-HTTP upstream sessions so a restarted
// Warden resumes them instead of initializing again. A record holds the
// session id, the negotiated protocol version and the initialize result,
// keyed by server name and a fingerprint of the server's URL and transport.
// It never holds headers, tokens or anything derived from them, and is
// stored as a secret (sealed under storeKey): the session id is the
// upstream's handle on the session.
//
// Records are kept per instance (bucket upstream_sessions/<owner>): an
// upstream session belongs to the connection one instance made, so another
// instance sharing the store never resumes it, while the same instance
// does after a restart. Records of the versions before (in
// upstream_sessions itself) go to the first instance that opens the store.
package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wardenmcp/warden/store"
)

// Record is one persisted upstream session.
type Record struct {
	Server          string          `json:"server"`
	Fingerprint     string          `json:"fingerprint"`
	SessionID       string          `json:"session_id"`
	ProtocolVersion string          `json:"protocol_version"`
	InitResult      json.RawMessage `json:"init_result"`
	Created         time.Time       `json:"created"`
	LastUsed        time.Time       `json:"last_used"`
}

// Store keeps one instance's records in the store with a copy in memory.
type Store struct {
	st     store.Store
	bucket string

	mu    sync.Mutex
	recs  map[string]Record
	modes map[string]string // server → "resumed" or "fresh", this process only
}

// Open loads the records owner made. owner names this instance and must
// stay the same across its restarts (unlike st.Instance(), which names the
// process); it must not contain "/".
func Open(ctx context.Context, st store.Store, owner string) (*Store, error) {
	if owner == "" || strings.Contains(owner, "/") {
		return nil, fmt.Errorf("sessions: owner %q: want a non-empty name without \"/\"", owner)
	}
	s := &Store{st: st, bucket: legacyBucket + "/" + owner, recs: map[string]Record{}, modes: map[string]string{}}
	err := st.Update(ctx, func(tx store.Tx) error {
		if err := s.adopt(tx); err != nil {
			return err
		}
		clear(s.recs) // fn may run again
		var keys [][]byte
		err := tx.Scan(s.bucket, nil, false, func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			v, err := tx.GetSecret(s.bucket, k)
			if err != nil {
				return err
			}
			var r Record
			if json.Unmarshal(v, &r) == nil {
				s.recs[string(k)] = r
			}
			// Written again as a secret: a record of a version that kept
			// it in plaintext is sealed from now on.
			if err := tx.PutSecret(s.bucket, k, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	return s, nil
}

// legacyBucket held the records of the versions before, keyed by server
// alone; the owners' buckets are its children.
const legacyBucket = "upstream_sessions"

// adopt moves records of the versions before into owner's bucket: they are
// this state dir's, from before an upgrade.
func (s *Store) adopt(tx store.Tx) error {
	var keys, vals [][]byte
	err := tx.Scan(legacyBucket, nil, false, func(k, v []byte) error {
		keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
		return nil
	})
	if err != nil {
		return err
	}
	for i, k := range keys {
		if err := tx.Put(s.bucket, k, vals[i]); err != nil {
			return err
		}
		if err := tx.Delete(legacyBucket, k); err != nil {
			return err
		}
	}
	return nil
}

// Load returns server's record if it was made for fingerprint.
func (s *Store) Load(server, fingerprint string) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[server]
	return r, ok && r.Fingerprint == fingerprint
}

// Save writes a record (a new or re-initialized session).
func (s *Store) Save(r Record, mode string) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	err = s.st.Update(context.Background(), func(tx store.Tx) error { return tx.PutSecret(s.bucket, []byte(r.Server), b) })
	if err != nil {
		return fmt.Errorf("sessions: save %s: %w", r.Server, err)
	}
	s.mu.Lock()
	s.recs[r.Server] = r
	s.modes[r.Server] = mode
	s.mu.Unlock()
	return nil
}

// MarkResumed notes that server's stored session was resumed.
func (s *Store) MarkResumed(server string) {
	s.mu.Lock()
	s.modes[server] = "resumed"
	s.mu.Unlock()
}

// Delete drops server's record; deleting none is not an error.
func (s *Store) Delete(server string) error {
	s.mu.Lock()
	_, ok := s.recs[server]
	delete(s.recs, server)
	delete(s.modes, server)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	err := s.st.Update(context.Background(), func(tx store.Tx) error { return tx.Delete(s.bucket, []byte(server)) })
	if err != nil {
		return fmt.Errorf("sessions: delete %s: %w", server, err)
	}
	return nil
}

// Servers lists the servers that have a record.
func (s *Store) Servers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.recs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Info is a record as operators see it: no full session id, no secrets.
type Info struct {
	Server          string    `json:"server"`
	SessionPrefix   string    `json:"session_id_prefix"`
	ProtocolVersion string    `json:"protocol_version"`
	Created         time.Time `json:"created"`
	AgeSeconds      float64   `json:"age_seconds"`
	Mode            string    `json:"mode"` // resumed, fresh, or stored (not used by this process yet)
}

// List describes every record.
func (s *Store) List() []Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []Info{}
	for _, r := range s.recs {
		mode := s.modes[r.Server]
		if mode == "" {
			mode = "stored"
		}
		out = append(out, Info{Server: r.Server, SessionPrefix: prefix(r.SessionID), ProtocolVersion: r.ProtocolVersion,
			Created: r.Created, AgeSeconds: time.Since(r.Created).Seconds(), Mode: mode})
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Server, b.Server) })
	return out
}

func prefix(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}
