package surface

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/protocol"
	"github.com/wardenmcp/warden/store"
)

// Client sessions of the 2025 revisions, shared through a shared store, so
// that a client's session continues on whichever instance a load balancer
// picks.
//
// The state lives in the store rather than sealed in the session id (as
// some gateways do): a DELETE then ends the session everywhere, a log level
// set on one instance holds wherever the session is adopted after (an
// instance that holds it already keeps the level it had), and ids stay
// short. Each session has a
// record: what the client said at initialize, its log level, when it was
// last used. It is keyed by the endpoint and the SHA-256 of the id, never
// the id, so a copy of the database gives no one a session.
//
// A request naming a session this instance does not hold adopts it: an SDK
// session is connected with the recorded state, without initialize, and
// serves the request. The client's answers to requests Warden sent it (and
// its cancellations) may reach an instance other than the one that asked:
// each is also published on relayTopic, and the instance holding the asking
// side hands it over. One too large for an event waits in relayBucket,
// sealed (it is what the person answered), named by the event, until
// sweepSessions removes it a minute or more later.

const (
	sessionsBucket = "client_sessions"
	relayTopic     = "client_relay"
	endedTopic     = "client_session_ended"
	relayBucket    = "client_relay"
	relayKeep      = time.Minute // how long a stored relayed answer is kept at least
	// A record's last use is written at most this often; a record unused
	// for the idle time is removed by the instance that finds it so.
	touchEvery = 5 * time.Minute
	// How long a request waits for the store to share its session: with
	// the store down the session still works here.
	storeWait = 2 * time.Second
)

// sessionRecord is a shared session's record.
type sessionRecord struct {
	State mcp.ServerSessionState `json:"state"`
	Used  time.Time              `json:"used"`
	Owner string                 `json:"owner,omitempty"` // the known caller who began it (callers.go)
}

// relayed is a message handed between instances for a session: its body,
// or the key in relayBucket of a body too large for an event.
type relayed struct {
	Surface string          `json:"surface"`
	Session string          `json:"session"` // idHash of the session id
	Body    json.RawMessage `json:"body,omitempty"`
	Stored  string          `json:"stored,omitempty"`
}

// ShareSessions keeps the 2025 client sessions in st (call before serving);
// Close stops following st.
func (s *Surfaces) ShareSessions(st store.Store) {
	if !st.Shared() {
		// Alone on its store, a session has no other instance to go on
		// on; after a restart its client begins a new one (404) and lists
		// everything again, which is what it must do after missing
		// Warden's notifications.
		return
	}
	s.st = st
	s.agg.st, s.search.st = st, st
	s.unwatch = []func(){st.Watch(relayTopic, s.onRelay), st.Watch(endedTopic, s.onEnded)}
}

// sessionKey is a session's key in the store: its endpoint and id hash.
func sessionKey(surface, id string) []byte {
	return []byte(surface + "\x00" + idHash(id))
}

// idHash names session id without giving it away.
func idHash(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// saveSession records ss (just initialized) for the other instances. A
// failure is logged: the session works here all the same.
func (v *view) saveSession(ss *mcp.ServerSession, level mcp.LoggingLevel) {
	p, st := ss.InitializeParams(), v.st
	if st == nil || p == nil || ss.ID() == "" || isStateless(ss) {
		return
	}
	version := p.ProtocolVersion
	if !slices.Contains(sessionVersions, version) {
		version = sessionVersions[0] // what the SDK answers an unknown one
	}
	rec := sessionRecord{State: mcp.ServerSessionState{InitializeParams: p,
		NegotiatedProtocolVersion: version, LogLevel: level}, Used: time.Now()}
	if l := v.live(ss.ID()); l != nil {
		l.mu.Lock()
		rec.Owner = l.owner
		l.mu.Unlock()
	}
	b, err := json.Marshal(rec)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeWait)
		defer cancel()
		k := sessionKey(v.surface, ss.ID())
		err = st.Update(ctx, func(tx store.Tx) error {
			if err := tx.Lock(string(k)); err != nil { // against touchSession's read-modify-write
				return err
			}
			return tx.Put(sessionsBucket, k, b)
		})
	}
	if err != nil {
		v.log.Warn("client session not shared: another instance will not know it", "session", ss.ID(), "err", err)
	}
}

// touchSession notes that session id is in use, at most every touchEvery.
func (v *view) touchSession(st store.Store, l *live, id string) {
	now := time.Now()
	if last := l.touched.Load(); now.UnixNano()-last < int64(touchEvery) || !l.touched.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeWait)
		defer cancel()
		_ = st.Batch(ctx, func(tx store.Tx) error {
			k := sessionKey(v.surface, id)
			if err := tx.Lock(string(k)); err != nil {
				return err
			}
			var rec sessionRecord
			if b, err := tx.Get(sessionsBucket, k); err != nil || b == nil || json.Unmarshal(b, &rec) != nil {
				return err
			}
			rec.Used = now
			b, _ := json.Marshal(rec)
			return tx.Put(sessionsBucket, k, b)
		})
	}()
}

// recorded reports whether the store has a record of session id on v.
func (v *view) recorded(id string) bool {
	found := false
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	_ = v.st.View(ctx, func(tx store.Tx) error {
		b, err := tx.Get(sessionsBucket, sessionKey(v.surface, id))
		found = b != nil
		return err
	})
	return found
}

// adopt connects the session id recorded by another instance (or before a
// restart), or returns nil if there is none.
func (v *view) adopt(st store.Store, id string) *live {
	v.adoptMu.Lock()
	defer v.adoptMu.Unlock()
	if l := v.live(id); l != nil {
		return l // adopted meanwhile
	}
	var rec sessionRecord
	ctx, cancel := context.WithTimeout(context.Background(), storeWait)
	defer cancel()
	err := st.View(ctx, func(tx store.Tx) error {
		b, err := tx.Get(sessionsBucket, sessionKey(v.surface, id))
		if b == nil || err != nil {
			return err
		}
		return json.Unmarshal(b, &rec)
	})
	if err != nil {
		v.log.Warn("a client session could not be looked up in the store", "session", id, "err", err)
		return nil
	}
	if rec.State.InitializeParams == nil {
		return nil
	}
	// Its client initialized it, maybe on another instance: here it is
	// simply initialized (a late notifications/initialized is ignored).
	rec.State.InitializedParams = &mcp.InitializedParams{}
	t := &mcp.StreamableServerTransport{SessionID: id}
	l := newLive()
	l.adopted, l.owner = t, rec.Owner
	v.sessMu.Lock()
	v.sessions[id] = l
	v.sessMu.Unlock()
	ss, err := v.srv.Connect(context.Background(), t, &mcp.ServerSessionOptions{State: &rec.State})
	if err != nil {
		v.sessMu.Lock()
		delete(v.sessions, id)
		v.sessMu.Unlock()
		v.log.Warn("a client session could not be adopted", "session", id, "err", err)
		return nil
	}
	l.setLevel(rec.State.LogLevel)
	l.touched.Store(time.Now().UnixNano())
	v.log.Info("client session adopted from the store", "session", id)
	v.track(ss)
	return l
}

// endShared ends session id on every instance (the client sent DELETE).
func (v *view) endShared(st store.Store, id string) {
	err := st.Update(context.Background(), func(tx store.Tx) error {
		k := sessionKey(v.surface, id)
		// The lock orders this with touchSession's read-modify-write,
		// which would otherwise write the record back.
		if err := tx.Lock(string(k)); err != nil {
			return err
		}
		if err := tx.Delete(sessionsBucket, k); err != nil {
			return err
		}
		return tx.Publish(endedTopic, k)
	})
	if err != nil {
		v.log.Warn("an ended client session's record stays in the store until it idles out", "session", id, "err", err)
	}
}

// relay publishes body, a client's answer or cancellation on session id,
// for the instance that holds the request it is about.
func (v *view) relay(st store.Store, id string, body []byte) {
	m := relayed{Surface: v.surface, Session: idHash(id), Body: body}
	msg, err := json.Marshal(m)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), storeWait)
		defer cancel()
		err = st.Update(ctx, func(tx store.Tx) error {
			if len(msg) <= store.MaxMessage {
				return tx.Publish(relayTopic, msg)
			}
			k := fmt.Sprintf("%016x%s", time.Now().UnixNano(), rand.Text()[:8]) // in time order, for the sweep
			if err := tx.PutSecret(relayBucket, []byte(k), body); err != nil {
				return err
			}
			small, err := json.Marshal(relayed{Surface: m.Surface, Session: m.Session, Stored: k})
			if err != nil {
				return err
			}
			return tx.Publish(relayTopic, small)
		})
	}
	if err != nil {
		v.log.Warn("a client's answer could not be handed to the other instances", "session", id, "err", err)
	}
}

// relayable reports whether body is what relay hands on: responses (to
// requests Warden sent the client) and cancellations.
func relayable(body []byte) bool {
	msgs, _ := protocol.Messages[rpc](body)
	for _, m := range msgs {
		if (m.Method == "" && len(m.ID) > 0) || m.Method == "notifications/cancelled" {
			return true
		}
	}
	return false
}

// onRelay hands a relayed message to the session it names, if this
// instance holds it, as if the client had sent it here.
func (s *Surfaces) onRelay(e store.Event) {
	if e.Resync || e.Mine(s.st) {
		return
	}
	var m relayed
	if json.Unmarshal(e.Msg, &m) != nil {
		return
	}
	for _, v := range s.allViews() {
		if v.surface != m.Surface {
			continue
		}
		id, l := v.sessionByKey(m.Session)
		if l == nil {
			return
		}
		ss := l.ss.Load()
		if ss == nil {
			return // not initialized: it asked nothing
		}
		if m.Stored != "" {
			err := s.st.View(context.Background(), func(tx store.Tx) (err error) {
				m.Body, err = tx.GetSecret(relayBucket, []byte(m.Stored))
				m.Body = bytes.Clone(m.Body)
				return err
			})
			if err != nil || m.Body == nil {
				s.log.Warn("a client's answer relayed through the store could not be read", "session", id, "err", err)
				return
			}
		}
		var h http.Handler = l.adopted
		if l.adopted == nil {
			h = s.endpointOf(v).sessions
		}
		r := httptest.NewRequest(http.MethodPost, "/"+v.surface, bytes.NewReader(m.Body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Session-Id", id)
		if p := ss.InitializeParams(); p != nil && slices.Contains(sessionVersions, p.ProtocolVersion) {
			r.Header.Set("Mcp-Protocol-Version", p.ProtocolVersion)
		}
		var fast rpc
		if json.Unmarshal(m.Body, &fast) != nil || !l.answer(&fast, m.Body) {
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
		return
	}
}

// onEnded closes this instance's copy of a session its client ended on
// another instance.
func (s *Surfaces) onEnded(e store.Event) {
	if e.Resync {
		return
	}
	surface, hash, _ := bytes.Cut(e.Msg, []byte{0})
	for _, v := range s.allViews() {
		if v.surface != string(surface) {
			continue
		}
		if _, l := v.sessionByKey(string(hash)); l != nil {
			if ss := l.ss.Load(); ss != nil {
				go ss.Close()
			}
		}
	}
}

// sessionByKey finds the view's session whose id hashes to hash.
func (v *view) sessionByKey(hash string) (string, *live) {
	v.sessMu.Lock()
	defer v.sessMu.Unlock()
	for id, l := range v.sessions {
		if idHash(id) == hash {
			return id, l
		}
	}
	return "", nil
}

// endpointOf returns v's pair of SDK handlers.
func (s *Surfaces) endpointOf(v *view) endpoint {
	switch v {
	case s.agg:
		return s.aggH
	case s.search:
		return s.searchH
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hs[v.single]
}

// sweepSessions removes the records of sessions unused for idle, and
// relayed answers kept longer than relayKeep.
func (s *Surfaces) sweepSessions(now time.Time, idle time.Duration) {
	cutoff := now.Add(-idle - touchEvery) // Used may lag by touchEvery
	relayCutoff := []byte(fmt.Sprintf("%016x", now.Add(-relayKeep).UnixNano()))
	err := s.st.Update(context.Background(), func(tx store.Tx) error {
		var stale, relays [][]byte
		err := tx.Scan(sessionsBucket, nil, false, func(k, b []byte) error {
			var rec sessionRecord
			if json.Unmarshal(b, &rec) != nil || rec.Used.Before(cutoff) {
				stale = append(stale, bytes.Clone(k))
			}
			return nil
		})
		if err == nil {
			err = tx.Scan(relayBucket, nil, false, func(k, _ []byte) error {
				if bytes.Compare(k, relayCutoff) >= 0 {
					return store.ErrStop
				}
				relays = append(relays, bytes.Clone(k))
				return nil
			})
		}
		for _, k := range stale {
			if err == nil {
				err = tx.Delete(sessionsBucket, k)
			}
		}
		for _, k := range relays {
			if err == nil {
				err = tx.Delete(relayBucket, k)
			}
		}
		return err
	})
	if err != nil {
		s.log.Warn("idle client sessions' records could not be removed; retrying later", "err", err)
	}
}
