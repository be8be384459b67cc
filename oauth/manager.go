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
	return m, nil
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
// (another request refreshed it meanwhile). It answers the token to use,
// or "" when the server needs a login.
func (m *Manager) refreshAfter(ctx context.Context, name, fp, used string) (string, error) {
	m.mu.Lock()
	s := m.get(name)
	m.mu.Unlock()
	s.refresh.Lock()
	defer s.refresh.Unlock()
	m.mu.Lock()
	rec := s.rec
	m.mu.Unlock()
	if rec == nil || rec.Fingerprint != fp {
		return "", nil
	}
	if rec.Token.AccessToken != used {
		return rec.Token.AccessToken, nil
	}
	if rec.Token.RefreshToken == "" {
		return "", nil
	}
	// Others wait on this refresh: one caller's cancellation must not end it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, withResource(m.client, rec.Resource))
	tok, err := rec.config().TokenSource(ctx, &oauth2.Token{RefreshToken: rec.Token.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" { // the grant is gone
			m.log.Warn("the authorization server refused the stored refresh token: the login is lost (revoked, expired, or rotated by a refresh whose answer never reached the store); run warden auth login "+name,
				"server", name, "status", re.Response.StatusCode, "error_code", re.ErrorCode)
			m.dropRefresh(s, rec)
			return "", nil
		}
		if re != nil { // the authorization server said no
			m.log.Warn("refreshing the upstream's token was refused", "server", name, "status", re.Response.StatusCode, "error_code", re.ErrorCode)
			return "", nil
		}
		m.log.Warn("refreshing the upstream's token failed", "server", name, "err", redact(err, rec))
		return "", err
	}
	next := *rec
	next.Token, next.Refreshed = tok, time.Now().UTC()
	// Durable before it is used: a rotated refresh token must survive a
	// crash right after this.
	if err := m.store.put(&next); err != nil {
		m.log.Error("storing the refreshed token failed; using it for now", "server", name, "err", err)
	}
	m.mu.Lock()
	if s.rec == rec {
		s.rec = &next
	}
	m.mu.Unlock()
	m.event(name, map[string]string{"state": StateAuthorized, "event": "refreshed"})
	return tok.AccessToken, nil
}

// dropRefresh forgets rec's refresh token, which the authorization server
// refused, in the store too: neither this process nor the next start asks
// again with it, and the next refusal of the server marks it needs_login
// (one refused refresh, not one per request).
func (m *Manager) dropRefresh(s *server, rec *Record) {
	next, tok := *rec, *rec.Token
	tok.RefreshToken = ""
	next.Token = &tok
	if err := m.store.put(&next); err != nil {
		m.log.Error("storing the lost login failed", "server", rec.Server, "err", err)
	}
	m.mu.Lock()
	if s.rec == rec {
		s.rec = &next
	}
	m.mu.Unlock()
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
