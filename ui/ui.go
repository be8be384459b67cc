// Package ui is the review page in the browser, served under /ui/: server
// rendered templates and a little JavaScript, all embedded in the binary.
// It holds no decision logic: every page reads and every form changes state
// through the operator REST API, called in-process as the person logged in
// (api.AsOperator), so the page decides exactly as `warden` does.
//
// A browser gets in with a one-time code from POST /v1/ui/login (`warden
// ui`: the local operator, an admin), or, with "auth.uiClient" set, by a
// person's login at the identity provider (idp.go) as the operator
// "operators" makes them. Either gives a session cookie (HttpOnly,
// SameSite=Strict) naming the operator, whose role the API enforces on
// every call the page makes for them; each form that changes state is a
// POST carrying the session's CSRF token. Codes, logins under way and
// sessions are kept in the store (session.go), so each works on every
// instance.
package ui

import (
	"crypto/subtle"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/store"
)

//go:embed templates/*.html static/*
var files embed.FS

// pages are parsed on the first page served, not at start: every process of
// the binary (each CLI command, each server's launcher) would pay for it.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(funcs).ParseFS(files, "templates/*.html"))
})

const (
	cookieName = "warden_ui"
	// sessionTTL bounds a browser session; `warden ui` starts another.
	sessionTTL = 12 * time.Hour
)

// UI serves /ui/. Set API, Store and Callers before serving.
type UI struct {
	API   http.Handler // the operator REST API (/v1/), called in-process as the session's operator
	Store store.Store  // login codes, logins under way and sessions
	// Callers is the live known callers: their identity provider's login
	// and "operators". Nil, or answering nil: only the one-time link.
	Callers func() *callers.Policy
}

// ServeHTTP routes /ui/.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Nothing from elsewhere: no CDN, no inline script, no framing.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer Chromium sends "Origin:
	// null" on form posts, which the daemon's Origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	u.mux().ServeHTTP(w, r)
}

func (u *UI) mux() *http.ServeMux {
	m := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	m.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /ui/login", u.login)
	m.HandleFunc("GET "+loginStartPath, u.loginStart)
	m.HandleFunc("GET "+callers.LoginCallbackPath, u.loginCallback)
	m.HandleFunc("GET /ui/{$}", u.authed(u.overview))
	m.HandleFunc("GET /ui/servers/{s}", u.authed(u.server))
	m.HandleFunc("GET /ui/servers/{s}/tools/{t}", u.authed(u.tool))
	m.HandleFunc("GET /ui/writes", u.authed(u.latches))
	m.HandleFunc("GET /ui/writes/{s}/clear", u.authed(u.confirmClear))
	m.HandleFunc("GET /ui/activity", u.authed(u.activity))
	m.HandleFunc("GET /ui/sessions", u.authed(u.upstreamSessions))
	m.HandleFunc("GET /ui/events", u.authed(u.events))
	m.HandleFunc("POST /ui/servers/{s}/approve", u.posted(u.approve))
	m.HandleFunc("POST /ui/servers/{s}/block", u.posted(u.block))
	m.HandleFunc("POST /ui/servers/{s}/admit", u.posted(u.admit))
	m.HandleFunc("POST /ui/servers/{s}/quarantine", u.posted(u.quarantine))
	m.HandleFunc("POST /ui/writes/{s}/clear", u.posted(u.clear))
	m.HandleFunc("POST /ui/logout", u.posted(u.logout))
	m.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page; start at /ui/", http.StatusNotFound)
	})
	return m
}

// login exchanges a one-time code for a session cookie; without a good
// code it shows how to get one, and nothing else.
func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	if code == "" {
		u.loginPage(w, http.StatusUnauthorized, "")
		return
	}
	id, err := u.redeem(code)
	if errors.Is(err, errNoCode) {
		u.loginPage(w, http.StatusUnauthorized, "This login link was used already or has expired: each link works once, for a few minutes.")
		return
	}
	if err != nil {
		u.loginPage(w, http.StatusServiceUnavailable, unavailable)
		return
	}
	loggedIn(w, id)
}

// loggedIn gives the browser the session cookie id.
func loggedIn(w http.ResponseWriter, id string) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/ui/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL / time.Second)})
	// Not a redirect: a redirect in a navigation that began on another
	// site (a link clicked in a web chat, the identity provider's
	// redirect back) is cross-site, so the browser would not send the
	// SameSite=Strict cookie just set. The page's own refresh is
	// same-site.
	render(w, http.StatusOK, "loggedin", page{Title: "Logged in"})
}

// loginPage shows how to log in: the one-time link, and the identity
// provider's login when there is one.
func (u *UI) loginPage(w http.ResponseWriter, status int, problem string) {
	p := page{Title: "Log in", Problem: problem}
	if l := u.idp(); l != nil {
		p.Issuer = l.Issuer()
	}
	render(w, status, "login", p)
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, s *session)

// authed serves a page to a session; a stranger gets the login page.
func (u *UI) authed(next handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := u.session(r)
		switch {
		case err != nil:
			u.loginPage(w, http.StatusServiceUnavailable, unavailable)
		case s == nil:
			u.loginPage(w, http.StatusUnauthorized, "")
		default:
			next(w, r, s)
		}
	}
}

// posted runs a form's POST for a session whose CSRF token it carries, then
// redirects (post/redirect/get) to where next says.
func (u *UI) posted(next func(r *http.Request, s *session) string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := u.session(r)
		if err != nil {
			http.Error(w, unavailable, http.StatusServiceUnavailable)
			return
		}
		if s == nil {
			http.Error(w, "Forbidden: no session; open the link `warden ui` prints", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.CSRF)) != 1 {
			http.Error(w, "Forbidden: the form's CSRF token is missing or not this session's; reload the page and try again", http.StatusForbidden)
			return
		}
		http.Redirect(w, r, next(r, s), http.StatusSeeOther)
	}
}

func (u *UI) logout(r *http.Request, s *session) string {
	_ = u.end(r.Context(), s) // an unreachable store: the session ends when it expires
	return "/ui/login"
}
