package oauth

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/upstream"
)

// refreshEarly is how long before its expiry a token is refreshed, so that
// a request does not leave with a token that expires on the way.
const refreshEarly = 30 * time.Second

// Manager holds every server's authorization state.
type Manager struct {
	store  *records
	log    *slog.Logger
	event  func(server string, data map[string]string)
	client *http.Client // talks to authorization servers

	mu       sync.Mutex
	servers  map[string]*server
	logins   map[string]*login // pending logins by state
	callback string            // the redirect URI: Warden's /oauth/callback
}

// server is one server's authorization state.
type server struct {
	refresh sync.Mutex // one refresh at a time

	// guarded by Manager.mu
	rec       *Record
	need      bool          // refused for want of a valid token
	changed   chan struct{} // closed and replaced when need or rec changes
	challenge http.Header   // the last refusal's, for the next login's discovery
	login     *login        // the latest login started
	stepUps   int           // logins for more scope in a row
}

// Options configure a Manager.
type Options struct {
	Logger *slog.Logger
	Event  func(server string, data map[string]string) // published on /v1/events; never carries secrets
	Client *http.Client                                // for authorization servers; nil: a client with a 30s timeout
}

// Open loads the stored authorizations.
func Open(ctx context.Context, st store.Store, opts Options) (*Manager, error) {
	recs, loaded, err := openRecords(ctx, st)
	if err != nil {
		return nil, err
	}
	m := &Manager{store: recs, log: opts.Logger, event: opts.Event, client: opts.Client,
		servers: map[string]*server{}, logins: map[string]*login{}}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.event == nil {
		m.event = func(string, map[string]string) {}
	}
	if m.client == nil {
		m.client = &http.Client{Timeout: 30 * time.Second}
	}
	for name, r := range loaded {
		m.get(name).rec = r
	}
	st.Watch(topic, m.changed)
	return m, nil
}

// changed follows a record another instance changed (a refresh, a login,
// a logout): the server's is read again; a Resync reads them all.
func (m *Manager) changed(e store.Event) {
	if e.Mine(m.store.st) {
		return // this instance's state is already the record
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := map[string]*Record{}
	var err error
	if e.Resync {
		if recs, err = m.store.loadAll(ctx); err == nil {
			m.mu.Lock()
			for name := range m.servers {
				if _, ok := recs[name]; !ok {
					recs[name] = nil
				}
			}
			m.mu.Unlock()
		}
	} else {
		recs[string(e.Msg)], err = m.store.load(ctx, string(e.Msg))
	}
	if err != nil {
		m.log.Warn("reloading the OAuth tokens another instance changed failed; the next Resync retries", "err", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, rec := range recs {
		m.get(name).adopt(rec)
	}
}

// adopt makes rec (nil: none) s's record. A new token (a login or a
// refresh) ends needs_login; a record gone (a logout) starts it. Call with
// Manager.mu held.
func (s *server) adopt(rec *Record) {
	old := s.rec
	switch {
	case rec == nil && old == nil:
		return
	case rec == nil:
		s.rec, s.need, s.challenge, s.stepUps = nil, true, nil, 0
	default:
		if old == nil || old.Token.AccessToken != rec.Token.AccessToken {
			s.need, s.challenge = false, nil
		}
		s.rec = rec
	}
	s.notify()
}

// SetCallbackURL sets the redirect URI, once the listener's address is known.
func (m *Manager) SetCallbackURL(u string) {
	m.mu.Lock()
	m.callback = u
	m.mu.Unlock()
}

// get returns name's state, made on first use. Call with m.mu held or
// before m is shared.
func (m *Manager) get(name string) *server {
	s := m.servers[name]
	if s == nil {
		s = &server{changed: make(chan struct{})}
		m.servers[name] = s
	}
	return s
}

// NeedsLogin implements upstream.Authorizer.
func (m *Manager) NeedsLogin(name string) (bool, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.get(name)
	return s.need, s.changed
}

// notify wakes whoever waits on s's changes. Call with m.mu held.
func (s *server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// markNeedsLogin records that name was refused and why (for the next login).
func (m *Manager) markNeedsLogin(name string, challenge http.Header, why string) {
	m.mu.Lock()
	s := m.get(name)
	was := s.need
	s.need = true
	if challenge != nil {
		s.challenge = challenge
	}
	s.notify()
	m.mu.Unlock()
	if !was {
		m.log.Warn("upstream needs a login: run warden auth login "+name, "server", name, "why", why)
		m.event(name, map[string]string{"state": StateNeedsLogin, "reason": why})
	}
}

// Transport implements upstream.Authorizer.
func (m *Manager) Transport(cfg *config.Server, next http.RoundTripper) http.RoundTripper {
	return &transport{m: m, name: cfg.Name, fp: cfg.Fingerprint(), next: next}
}

// transport adds the server's bearer token to each request; refreshes it
// before it expires and once when the server answers 401; and fails the
// request with upstream.ErrAuthRequired when no valid token is left, which
// marks the server needs_login. A 403 insufficient_scope (step-up) marks it
// too: more scope needs a person's consent. The probe of a resumed session
// is the exception: its 401 or 403 goes back as it came (see
// upstream.ResumeProbe).
type transport struct {
	m    *Manager
	name string
	fp   string
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.m.token(req.Context(), t.name, t.fp)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, err := t.send(req, tok)
	if err != nil || upstream.ResumeProbe(req) {
		return resp, err // a resumed session's refusal is the session's, not the token's
	}
	if resp.StatusCode == http.StatusUnauthorized && tok != "" && replayable(req) {
		fresh, ferr := t.m.refreshAfter(req.Context(), t.name, t.fp, tok)
		if ferr == nil && fresh != "" {
			drain(resp)
			if req, err = rewind(req); err != nil {
				return nil, err
			}
			if resp, err = t.send(req, fresh); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		why := "the server refused Warden's request (401)"
		if tok == "" {
			why = "the server requires authorization"
		}
		t.m.markNeedsLogin(t.name, resp.Header.Clone(), why)
	case resp.StatusCode == http.StatusForbidden && challengeParam(resp.Header, "error") == "insufficient_scope":
		t.m.markNeedsLogin(t.name, resp.Header.Clone(), "the server asks for more scope (403 insufficient_scope)")
	default:
		return resp, nil
	}
	drain(resp)
	return nil, upstream.AuthRequired(t.name)
}

func (t *transport) send(req *http.Request, tok string) (*http.Response, error) {
	if tok != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return t.next.RoundTrip(req)
}

// token returns name's access token, refreshed first if it is about to
// expire; "" when there is none.
func (m *Manager) token(ctx context.Context, name, fp string) (string, error) {
	m.mu.Lock()
	s := m.get(name)
	rec := s.rec
	m.mu.Unlock()
	if rec == nil || rec.Fingerprint != fp {
		return "", nil
	}
	if exp := rec.Token.Expiry; !exp.IsZero() && time.Until(exp) < refreshEarly && rec.Token.RefreshToken != "" {
		if fresh, err := m.refreshAfter(ctx, name, fp, rec.Token.AccessToken); err == nil && fresh != "" {
			return fresh, nil
		}
	}
	return rec.Token.AccessToken, nil
}

// refreshAfter refreshes name's token unless it already changed from used
// (another request, or another instance, refreshed it meanwhile). It
// answers the token to use, or "" when the server needs a login. The
// refresh holds the server's lock and starts from the stored record: two
// instances never spend one refresh token, which rotation would make the
// second one's refusal.
func (m *Manager) refreshAfter(ctx context.Context, name, fp, used string) (string, error) {
	m.mu.Lock()
	s := m.get(name)
	m.mu.Unlock()
	s.refresh.Lock()
	defer s.refresh.Unlock()
	m.mu.Lock()
	rec := s.rec
	m.mu.Unlock()
	if rec != nil && rec.Fingerprint == fp && rec.Token.AccessToken != used {
		return rec.Token.AccessToken, nil
	}
	// Others wait on this refresh: one caller's cancellation must not end it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var (
		spent string        // the refresh token a grant was asked with
		from  *Record       // the record it was asked for
		tok   *oauth2.Token // what it got
		ferr  error         // or why not
		next  *Record       // the record to use from now on
	)
	if !m.store.st.Shared() {
		// Alone on its store, s.refresh is lock enough: the grant is
		// asked before the write transaction, which would otherwise hold
		// the embedded store's one writer through an HTTP call. The
		// transaction below finds the token spent and stores the answer.
		var cur *Record
		if m.store.st.View(ctx, func(tx store.Tx) (err error) { cur, err = getRecord(tx, name); return err }) == nil &&
			cur != nil && cur.Fingerprint == fp && cur.Token.AccessToken == used && cur.Token.RefreshToken != "" {
			spent, from = cur.Token.RefreshToken, cur
			tok, ferr = m.grant(ctx, cur)
		}
	}
	err := m.store.st.Update(ctx, func(tx store.Tx) error {
		if err := tx.Lock(lockName(name)); err != nil {
			return err
		}
		cur, err := getRecord(tx, name)
		next = cur // the store's is the one: gone, or refreshed by another instance
		if err != nil || cur == nil || cur.Fingerprint != fp || cur.Token.AccessToken != used || cur.Token.RefreshToken == "" {
			return err
		}
		if spent != cur.Token.RefreshToken { // not again when fn runs again: it was spent
			spent, from = cur.Token.RefreshToken, cur
			tok, ferr = m.grant(ctx, cur)
		}
		var re *oauth2.RetrieveError
		switch {
		case ferr == nil:
			r := *cur
			r.Token, r.Refreshed = tok, time.Now().UTC()
			next = &r
		case errors.As(ferr, &re) && re.ErrorCode == "invalid_grant": // the grant is gone
			r, t := *cur, *cur.Token
			t.RefreshToken = ""
			r.Token = &t
			next = &r
		default:
			return nil
		}
		// Durable before it is used: a rotated refresh token must survive a
		// crash right after this.
		return putRecord(tx, next)
	})
	if err != nil {
		if tok == nil {
			m.log.Warn("refreshing the upstream's token needs the store, which failed", "server", name, "err", err)
			return "", err
		}
		m.log.Error("storing the refreshed token failed; using it for now", "server", name, "err", err)
		r := *from
		r.Token, r.Refreshed = tok, time.Now().UTC()
		next = &r
	}
	m.mu.Lock()
	if s.rec == rec {
		s.rec = next
	}
	m.mu.Unlock()
	var re *oauth2.RetrieveError
	switch {
	case tok != nil:
		m.event(name, map[string]string{"state": StateAuthorized, "event": "refreshed"})
	case errors.As(ferr, &re) && re.ErrorCode == "invalid_grant":
		m.log.Warn("the authorization server refused the stored refresh token: the login is lost (revoked, expired, or rotated by a refresh whose answer never reached the store); run warden auth login "+name,
			"server", name, "status", re.Response.StatusCode, "error_code", re.ErrorCode)
		return "", nil
	case re != nil: // the authorization server said no
		m.log.Warn("refreshing the upstream's token was refused", "server", name, "status", re.Response.StatusCode, "error_code", re.ErrorCode)
		return "", nil
	case ferr != nil:
		m.log.Warn("refreshing the upstream's token failed", "server", name, "err", redact(ferr, from))
		return "", ferr
	}
	if next == nil || next.Fingerprint != fp || next.Token.AccessToken == used {
		return "", nil
	}
	return next.Token.AccessToken, nil
}

// grant asks rec's authorization server for a new token with rec's
// refresh token.
func (m *Manager) grant(ctx context.Context, rec *Record) (*oauth2.Token, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, withResource(m.client, rec.Resource))
	return rec.config().TokenSource(ctx, &oauth2.Token{RefreshToken: rec.Token.RefreshToken}).Token()
}

// redact removes rec's secrets from err's text.
func redact(err error, rec *Record) string {
	msg := err.Error()
	for _, v := range []string{rec.ClientSecret, rec.Token.RefreshToken, rec.Token.AccessToken} {
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "[secret]")
		}
	}
	return msg
}

// challengeParam is a parameter of h's Bearer challenge: "error", "scope".
func challengeParam(h http.Header, name string) string {
	cs, _ := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// unionScopes is a followed by what b adds.
func unionScopes(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// withResource is c, adding the resource parameter (RFC 8707) to the
// refresh requests it sends, as the MCP spec asks of every token request;
// the oauth2 package has no option for that.
func withResource(c *http.Client, resource string) *http.Client {
	if resource == "" {
		return c
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cc := *c
	cc.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		closeBody(req)
		if err != nil {
			return nil, err
		}
		form, err := url.ParseQuery(string(body))
		if err == nil && form.Get("grant_type") == "refresh_token" {
			form.Set("resource", resource)
			body = []byte(form.Encode())
		}
		r := req.Clone(req.Context())
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		return next.RoundTrip(r)
	})
	return &cc
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
