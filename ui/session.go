package ui

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/store"
)

// Login codes and sessions live in the store, shared by every instance. A
// code or cookie is a bearer secret: the store keys each by its SHA-256,
// never by itself, and a session (its CSRF token) is sealed
// (Tx.PutSecret). Expired ones are removed when a code is minted or a
// session started.
const (
	bucketCodes    = "ui_codes"    // SHA-256(code) → expiry, Unix nanoseconds
	bucketSessions = "ui_sessions" // SHA-256(cookie) → session (JSON), sealed
)

// unavailable is what a browser is told when the store cannot be reached.
const unavailable = "Warden's store is unavailable: nothing can be shown or changed now. Try again in a moment."

// errNoCode: the login code is unknown, used or expired.
var errNoCode = errors.New("no such login code")

// session is one browser's login.
type session struct {
	key      []byte           // the store key: SHA-256 of the cookie
	Operator callers.Operator `json:"operator"` // who logged in: the page decides as them
	// Person is whom the identity provider named, in a session begun
	// there (nil: the local operator's). Their role is read from
	// "operators" again on every request, so a change of the config
	// applies to sessions already open.
	Person  *callers.Identity `json:"person,omitempty"`
	CSRF    string            `json:"csrf"`
	Expires time.Time         `json:"expires"`
	Flash   *flash            `json:"flash,omitempty"` // shown once, on the next page
}

// flash is what a form's POST reports on the page it redirects to.
type flash struct {
	OK         bool       `json:"ok"`
	Message    string     `json:"message"`
	Server     string     `json:"server,omitempty"`
	Mismatches []mismatch `json:"mismatches,omitempty"`
}

func token() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func storeKey(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return []byte(hex.EncodeToString(sum[:]))
}

// NewCode mints a login code, good once within api.UILoginTTL.
func (u *UI) NewCode() (string, error) {
	c, err := token()
	if err != nil {
		return "", err
	}
	now := time.Now()
	exp := binary.BigEndian.AppendUint64(nil, uint64(now.Add(api.UILoginTTL).UnixNano()))
	err = u.Store.Update(context.Background(), func(tx store.Tx) error {
		if err := prune(tx, bucketCodes, now, func(_, v []byte) (time.Time, error) {
			if len(v) != 8 {
				return time.Time{}, nil // unreadable: remove
			}
			return time.Unix(0, int64(binary.BigEndian.Uint64(v))), nil
		}); err != nil {
			return err
		}
		return tx.Put(bucketCodes, storeKey(c), exp)
	})
	if err != nil {
		return "", fmt.Errorf("ui: keep the login code: %w", err)
	}
	return c, nil
}

// redeem spends a login code and starts a session of the local operator:
// its cookie value. The code is spent under its store lock, so two
// instances cannot both take it.
func (u *UI) redeem(code string) (string, error) {
	id, v, err := newSession(callers.Local, nil)
	if err != nil {
		return "", err
	}
	now := time.Now()
	ck := storeKey(code)
	err = u.Store.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.Lock("ui/code/" + string(ck)); err != nil {
			return err
		}
		exp, err := tx.Get(bucketCodes, ck)
		if err != nil {
			return err
		}
		if len(exp) != 8 || now.UnixNano() > int64(binary.BigEndian.Uint64(exp)) {
			return errNoCode
		}
		if err := tx.Delete(bucketCodes, ck); err != nil {
			return err
		}
		return keepSession(tx, now, id, v)
	})
	if err != nil && !errors.Is(err, errNoCode) {
		err = fmt.Errorf("ui: start a session: %w", err)
	}
	if err != nil {
		return "", err
	}
	return id, nil
}

// newSession is a new session of op (person, if the identity provider
// named them): its cookie value, and what the store keeps of it.
func newSession(op callers.Operator, person *callers.Identity) (id string, v []byte, err error) {
	if id, err = token(); err != nil {
		return "", nil, err
	}
	csrf, err := token()
	if err != nil {
		return "", nil, err
	}
	v, err = json.Marshal(&session{Operator: op, Person: person, CSRF: csrf, Expires: time.Now().Add(sessionTTL)})
	return id, v, err
}

// keepSession stores the session v under its cookie id's key, removing
// the expired ones.
func keepSession(tx store.Tx, now time.Time, id string, v []byte) error {
	if err := prune(tx, bucketSessions, now, func(k, _ []byte) (time.Time, error) {
		s, err := readSession(tx, k)
		if s == nil {
			return time.Time{}, err
		}
		return s.Expires, err
	}); err != nil {
		return err
	}
	return tx.PutSecret(bucketSessions, storeKey(id), v)
}

// prune deletes bucket's entries whose expiry (read by expires) is past.
func prune(tx store.Tx, bucket string, now time.Time, expires func(k, v []byte) (time.Time, error)) error {
	var gone [][]byte
	err := tx.Scan(bucket, nil, false, func(k, v []byte) error {
		exp, err := expires(k, v)
		if err != nil {
			return err
		}
		if now.After(exp) {
			gone = append(gone, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range gone {
		if err := tx.Delete(bucket, k); err != nil {
			return err
		}
	}
	return nil
}

// readSession reads the session at key; nil if none, or if it does not
// read (it was sealed under a key Warden no longer has, or was kept by a
// Warden that recorded no operator: a new login).
func readSession(tx store.Tx, key []byte) (*session, error) {
	v, err := tx.GetSecret(bucketSessions, key)
	if v == nil || err != nil {
		if errors.Is(err, store.ErrUnavailable) {
			return nil, err
		}
		return nil, nil
	}
	var s session
	if json.Unmarshal(v, &s) != nil || s.Operator.Name == "" {
		return nil, nil
	}
	s.key = key
	return &s, nil
}

// session finds the request's session, with its operator as "operators"
// makes them now: nil without a valid cookie, or for a person no longer an
// operator; an error when the store cannot say.
func (u *UI) session(r *http.Request) (*session, error) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil, nil
	}
	var s *session
	err = u.Store.View(r.Context(), func(tx store.Tx) error {
		s, err = readSession(tx, storeKey(c.Value))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ui: read the session: %w", err)
	}
	if s == nil || time.Now().After(s.Expires) {
		return nil, nil
	}
	if s.Person != nil {
		op, err := u.policy().Operator(*s.Person)
		if err != nil {
			return nil, nil // no longer an operator: logged out
		}
		s.Operator = op
	}
	return s, nil
}

// save writes s back (its flash changed).
func (u *UI) save(ctx context.Context, s *session) error {
	v, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return u.Store.Update(ctx, func(tx store.Tx) error { return tx.PutSecret(bucketSessions, s.key, v) })
}

// end deletes s: a logout.
func (u *UI) end(ctx context.Context, s *session) error {
	return u.Store.Update(ctx, func(tx store.Tx) error { return tx.Delete(bucketSessions, s.key) })
}

// setFlash keeps f for s's next page, on whichever instance serves it. A
// store that cannot be reached loses it: the page after shows the state.
func (u *UI) setFlash(s *session, f *flash) {
	s.Flash = f
	_ = u.save(context.Background(), s)
}

// takeFlash returns s's flash, once.
func (u *UI) takeFlash(s *session) *flash {
	f := s.Flash
	if f != nil {
		s.Flash = nil
		_ = u.save(context.Background(), s)
	}
	return f
}
