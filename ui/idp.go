package ui

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/internal/display"
	"github.com/wardenmcp/warden/store"
	"golang.org/x/oauth2"
)

// A person's login at the identity provider (callers.Login): GET
// /ui/login/idp keeps a login under way in the store (its state, the ID
// token's nonce and the PKCE verifier; sealed, keyed by the state's
// SHA-256, good once within loginTTL, so the instance the browser comes
// back to may finish it) and sends the browser to the provider, which
// sends it back to GET /ui/callback. There the state is spent, the code
// exchanged and the ID token checked; a person "operators" names gets a
// session as that operator, anyone else a page saying what an admin adds.
const (
	loginStartPath = "/ui/login/idp"
	bucketLogins   = "ui_logins" // SHA-256(state) → pending (JSON), sealed
	loginTTL       = 10 * time.Minute
	// loginCookie holds the state in the browser that started the login,
	// so a callback URL sent to someone else (to log them in as the
	// sender) finishes nothing. SameSite=Lax, not Strict: the provider's
	// redirect back is a cross-site navigation, on which a browser sends
	// Lax cookies (top-level GET) but not Strict ones.
	loginCookie = "warden_ui_login"
)

// maxLogins bounds the logins under way (about: instances starting logins
// at once may each pass it by one): starting one needs no credentials, so
// a flood of starts must not fill the store.
var maxLogins = 1000

// errBusy: maxLogins logins are under way.
var errBusy = errors.New("too many logins are under way; try again in a few minutes")

// pending is a login under way.
type pending struct {
	Nonce    string    `json:"nonce"`
	Verifier string    `json:"verifier"`
	Expires  time.Time `json:"expires"`
}

// errNoLogin: the state names no login under way (spent, expired, or
// never started).
var errNoLogin = errors.New("no such login under way")

func (u *UI) policy() *callers.Policy {
	if u.Callers == nil {
		return nil
	}
	return u.Callers()
}

// idp is the identity provider's login, nil without one.
func (u *UI) idp() *callers.Login { return u.policy().Login() }

// loginStart sends the browser to the identity provider.
func (u *UI) loginStart(w http.ResponseWriter, r *http.Request) {
	l := u.idp()
	if l == nil {
		u.loginPage(w, http.StatusNotFound, `This Warden has no identity provider login: its config sets no "auth"."uiClient".`)
		return
	}
	state, err := token()
	if err != nil {
		u.loginPage(w, http.StatusInternalServerError, err.Error())
		return
	}
	nonce, err := token()
	if err != nil {
		u.loginPage(w, http.StatusInternalServerError, err.Error())
		return
	}
	p := pending{Nonce: nonce, Verifier: oauth2.GenerateVerifier(), Expires: time.Now().Add(loginTTL)}
	to, err := l.AuthURL(r.Context(), state, p.Nonce, p.Verifier)
	if err != nil {
		u.loginPage(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	switch err := u.keepLogin(r.Context(), state, p); {
	case errors.Is(err, errBusy):
		u.loginPage(w, http.StatusServiceUnavailable, "Warden cannot start your login now: "+errBusy.Error()+".")
		return
	case err != nil:
		u.loginPage(w, http.StatusServiceUnavailable, unavailable)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: state, Path: callers.LoginCallbackPath, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, MaxAge: int(loginTTL / time.Second)})
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// loginCallback finishes a login the identity provider sent back.
func (u *UI) loginCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: callers.LoginCallbackPath, HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: -1})
	if c, err := r.Cookie(loginCookie); err != nil || state == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		u.loginPage(w, http.StatusBadRequest, "This login was not started in this browser, or was finished already: log in again.")
		return
	}
	p, err := u.takeLogin(r.Context(), state)
	if errors.Is(err, errNoLogin) {
		u.loginPage(w, http.StatusBadRequest, "This login was finished already or took too long (each works once, within ten minutes): log in again.")
		return
	}
	if err != nil {
		u.loginPage(w, http.StatusServiceUnavailable, unavailable)
		return
	}
	if e := q.Get("error"); e != "" {
		why := e
		if d := q.Get("error_description"); d != "" {
			why += ": " + d
		}
		u.loginPage(w, http.StatusUnauthorized, display.Text("The identity provider did not log you in ("+why+")."))
		return
	}
	l := u.idp()
	if l == nil {
		u.loginPage(w, http.StatusNotFound, `This Warden no longer has an identity provider login: its config sets no "auth"."uiClient".`)
		return
	}
	id, err := l.Finish(r.Context(), q.Get("code"), p.Verifier, p.Nonce)
	if err != nil {
		u.loginPage(w, http.StatusUnauthorized, display.Text(err.Error()))
		return
	}
	op, err := u.policy().Operator(id)
	if err != nil {
		render(w, http.StatusForbidden, "notoperator", page{Title: "Not an operator", Issuer: l.Issuer(), Data: id})
		return
	}
	sid, v, err := newSession(op, &id)
	if err == nil {
		err = u.Store.Update(r.Context(), func(tx store.Tx) error { return keepSession(tx, time.Now(), sid, v) })
	}
	if err != nil {
		u.loginPage(w, http.StatusServiceUnavailable, unavailable)
		return
	}
	loggedIn(w, sid)
}

// keepLogin stores a login under way, removing the expired ones; errBusy
// when maxLogins are.
func (u *UI) keepLogin(ctx context.Context, state string, p pending) error {
	v, err := json.Marshal(&p)
	if err != nil {
		return err
	}
	now := time.Now()
	return u.Store.Update(ctx, func(tx store.Tx) error {
		live := 0
		if err := prune(tx, bucketLogins, now, func(k, _ []byte) (time.Time, error) {
			p, err := readLogin(tx, k)
			if errors.Is(err, errNoLogin) {
				return time.Time{}, nil // unreadable: remove
			}
			if !now.After(p.Expires) {
				live++
			}
			return p.Expires, err
		}); err != nil {
			return err
		}
		if live >= maxLogins {
			return errBusy
		}
		return tx.PutSecret(bucketLogins, storeKey(state), v)
	})
}

// takeLogin spends the login under way of state: under its store lock, so
// two instances cannot both finish it.
func (u *UI) takeLogin(ctx context.Context, state string) (pending, error) {
	var p pending
	k := storeKey(state)
	err := u.Store.Update(ctx, func(tx store.Tx) error {
		if err := tx.Lock("ui/login/" + string(k)); err != nil {
			return err
		}
		var err error
		if p, err = readLogin(tx, k); err != nil {
			return err
		}
		if time.Now().After(p.Expires) {
			return errNoLogin
		}
		return tx.Delete(bucketLogins, k)
	})
	if err != nil && !errors.Is(err, errNoLogin) {
		err = fmt.Errorf("ui: finish a login: %w", err)
	}
	return p, err
}

// readLogin reads the login under way at key: errNoLogin if none, or if
// it does not read (sealed under a key Warden no longer has).
func readLogin(tx store.Tx, key []byte) (pending, error) {
	var p pending
	v, err := tx.GetSecret(bucketLogins, key)
	if errors.Is(err, store.ErrUnavailable) {
		return p, err
	}
	if v == nil || err != nil || json.Unmarshal(v, &p) != nil {
		return pending{}, errNoLogin
	}
	return p, nil
}
