package oauth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/wardenmcp/warden/config"
)

// Authorization states a server can be in.
const (
	StateAuthorized = "authorized"  // a token is stored and was not refused
	StateNeedsLogin = "needs_login" // refused for want of a valid token
	StateNone       = "none"        // no token, and never refused: the server may need none
)

// Login states.
const (
	LoginPending = "pending" // waiting for the person and the callback
	LoginFailed  = "failed"
	LoginDone    = "done"
)

// loginTimeout bounds how long a login waits for the person.
const loginTimeout = 10 * time.Minute

// maxStepUps bounds the logins for more scope in a row (after the first
// login): a server that keeps answering insufficient_scope will not be
// satisfied by more of them.
const maxStepUps = 2

// login is one person-in-the-loop authorization in progress.
type login struct {
	id      string
	server  string
	started time.Time
	cancel  context.CancelFunc
	url     chan string         // the authorization URL, once
	code    chan callbackResult // what the callback brought, once
	done    chan struct{}       // closed when the login ended
	err     error               // why it failed; set before done is closed
	secrets []string            // masked in err's text

	mu     sync.Mutex
	cfg    *oauth2.Config // captured at the code exchange
	tok    *oauth2.Token
	metas  []*oauthex.AuthServerMeta // authorization server metadata seen during discovery
	regged bool                      // a client was registered dynamically
	asked  string                    // the authorization URL
}

// resource is the resource parameter the login asked for.
func (l *login) resource() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	u, err := url.Parse(l.asked)
	if err != nil {
		return ""
	}
	return u.Query().Get("resource")
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// LoginInfo is a login as the API shows it.
type LoginInfo struct {
	ID        string    `json:"id"`
	State     string    `json:"state"` // pending, failed, done
	Error     string    `json:"error,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// Info is a server's authorization as the API shows it: never a token or
// a client secret.
type Info struct {
	Server       string     `json:"server"`
	State        string     `json:"state"`
	Issuer       string     `json:"issuer,omitempty"`
	ClientID     string     `json:"client_id,omitempty"`
	Scopes       []string   `json:"scopes,omitempty"`
	Refreshable  bool       `json:"refreshable"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	AuthorizedAt *time.Time `json:"authorized_at,omitempty"`
	Login        *LoginInfo `json:"login,omitempty"`
}

// Status describes name's authorization.
func (m *Manager) Status(cfg *config.Server) Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.get(cfg.Name)
	info := Info{Server: cfg.Name, State: StateNone}
	if r := s.rec; r != nil && r.Fingerprint == cfg.Fingerprint() {
		info.State, info.Issuer, info.ClientID, info.Scopes = StateAuthorized, r.Issuer, r.ClientID, r.Scopes
		info.Refreshable = r.Token.RefreshToken != ""
		at := r.Authorized
		info.AuthorizedAt = &at
		if !r.Token.Expiry.IsZero() {
			exp := r.Token.Expiry.UTC()
			info.ExpiresAt = &exp
		}
	}
	if s.need {
		info.State = StateNeedsLogin
	}
	if l := s.login; l != nil {
		li := &LoginInfo{ID: l.id, State: LoginPending, StartedAt: l.started}
		select {
		case <-l.done:
			li.State = LoginDone
			if l.err != nil {
				li.State, li.Error = LoginFailed, l.err.Error()
			}
		default:
		}
		info.Login = li
	}
	return info
}

// LoginStarted is the answer to a started login.
type LoginStarted struct {
	ID               string `json:"id"`
	AuthorizationURL string `json:"authorization_url"`
}

// Login starts a login for cfg: it discovers the server's authorization
// server, registers or names the client, and answers the URL the person
// opens. The login goes on in the background until the callback comes back
// (see Callback) or loginTimeout passes.
func (m *Manager) Login(ctx context.Context, cfg *config.Server) (*LoginStarted, error) {
	if cfg.Transport == config.TransportStdio {
		return nil, fmt.Errorf("server %q is a stdio server: OAuth is for HTTP servers", cfg.Name)
	}
	m.mu.Lock()
	callback := m.callback
	if callback == "" {
		m.mu.Unlock()
		return nil, errors.New("warden's listener is not up yet; retry in a moment")
	}
	s := m.get(cfg.Name)
	if prev := s.login; prev != nil {
		prev.cancel() // a new login replaces one still waiting
	}
	stepUp := challengeParam(s.challenge, "error") == "insufficient_scope"
	if stepUp && s.stepUps >= maxStepUps {
		m.mu.Unlock()
		return nil, fmt.Errorf("server %q still refuses Warden for want of scope (%s) after %d logins that asked for more: more logins will not help; check the account's permissions at the provider or the server's \"oauth\".\"scopes\" in the config, then run warden auth logout %s and log in again",
			cfg.Name, challengeParam(s.challenge, "scope"), maxStepUps+1, cfg.Name)
	}
	if stepUp {
		s.stepUps++
	} else {
		s.stepUps = 0
	}
	lctx, cancel := context.WithTimeout(context.Background(), loginTimeout)
	l := &login{id: rand.Text()[:12], server: cfg.Name, started: time.Now().UTC(), cancel: cancel,
		url: make(chan string, 1), code: make(chan callbackResult, 1), done: make(chan struct{}), secrets: cfg.Secrets()}
	s.login = l
	challenge, rec := s.challenge, s.rec
	m.mu.Unlock()

	req, resp, err := m.challenge(ctx, cfg, challenge)
	if err != nil {
		m.finish(l, err)
		return nil, l.err
	}
	var prior []string // scopes granted before, kept through a step-up
	if rec != nil && rec.Fingerprint == cfg.Fingerprint() {
		prior = rec.Scopes
	}
	stored := storedClient(rec, callback)
	refused := fake(resp.StatusCode, resp.Header.Clone()) // for a second attempt: Authorize consumes resp
	h, err := auth.NewAuthorizationCodeHandler(m.handlerConfig(cfg, prior, stored, callback, l))
	if err != nil {
		resp.Body.Close()
		m.finish(l, err)
		return nil, l.err
	}
	go func() {
		err := h.Authorize(lctx, req, resp)
		if err != nil && stored != nil && l.movedFrom(stored.Issuer) {
			err = m.reregister(lctx, cfg, prior, callback, l, req, refused)
		}
		if err == nil {
			err = m.complete(cfg, l, callback)
		}
		m.finish(l, err)
	}()
	select {
	case u := <-l.url:
		return &LoginStarted{ID: l.id, AuthorizationURL: u}, nil
	case <-l.done:
		return nil, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// challenge finds the refusal that discovery starts from: the server's
// last refusal of a request of Warden's (it names the scope that request
// needs), else what the server answers an unauthorized initialize now. A
// server that lets Warden in anyway is given an empty 401, so that
// discovery falls back to the well-known URLs.
func (m *Manager) challenge(ctx context.Context, cfg *config.Server, last http.Header) (*http.Request, *http.Response, error) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"warden","version":"login"}}}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("server %q: bad url", cfg.Name)
	}
	if last != nil {
		code := http.StatusUnauthorized
		if challengeParam(last, "error") == "insufficient_scope" {
			code = http.StatusForbidden
		}
		return req, fake(code, last), nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("reaching server %q (%s) failed: %w", cfg.Name, cfg.DisplayURL(), err)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return req, resp, nil
	case http.StatusForbidden:
		if challengeParam(resp.Header, "error") == "insufficient_scope" {
			return req, resp, nil
		}
		drain(resp)
		return nil, nil, fmt.Errorf("server %q answered 403 Forbidden without asking for a scope: Warden's login cannot fix that", cfg.Name)
	}
	drain(resp)
	return req, fake(http.StatusUnauthorized, nil), nil
}

func fake(code int, h http.Header) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(""))}
}

// handlerConfig is the SDK handler's config for one login, asking for the
// discovered scopes and the prior ones. The client is, in the spec's order:
// the configured one (clientId); else a client ID metadata document
// (clientMetadataUrl) where the authorization server supports it; else
// stored, the client this server registered dynamically before (nil: none);
// else a new dynamic registration.
func (m *Manager) handlerConfig(cfg *config.Server, prior []string, stored *oauthex.ClientCredentials, callback string, l *login) *auth.AuthorizationCodeHandlerConfig {
	base := m.client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	client := &http.Client{Timeout: m.client.Timeout, Transport: &observer{next: base, l: l}}
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         callback,
		Client:              client,
		RequestRefreshToken: true,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return m.await(ctx, l, args.URL)
		},
		NewTokenSource: func(_ context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			l.mu.Lock()
			l.cfg, l.tok = c, t
			l.mu.Unlock()
			return oauth2.StaticTokenSource(t), nil
		},
	}
	o := cfg.OAuth
	if o == nil {
		o = &config.OAuth{}
	}
	hc.ScopeFilter = func(discovered []string) []string {
		if len(o.Scopes) > 0 {
			return o.Scopes
		}
		return unionScopes(prior, discovered)
	}
	if o.ClientID != "" {
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
		return hc
	}
	if o.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	hc.PreregisteredClient = stored
	hc.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{callback}, ClientName: "Warden",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}}
	return hc
}

// await hands the authorization URL to the person and waits for the
// callback that carries the code.
func (m *Manager) await(ctx context.Context, l *login, authURL string) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, err
	}
	state := u.Query().Get("state")
	l.mu.Lock()
	l.asked = authURL
	l.mu.Unlock()
	m.mu.Lock()
	m.logins[state] = l
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.logins, state)
		m.mu.Unlock()
	}()
	l.url <- authURL
	select {
	case r := <-l.code:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no answer from the browser within %s, or a newer login replaced this one; run warden auth login %s again", loginTimeout, l.server)
	}
}

// complete stores what the login obtained and lets the server's calls through.
func (m *Manager) complete(cfg *config.Server, l *login, callback string) error {
	l.mu.Lock()
	c, tok, metas := l.cfg, l.tok, l.metas
	regged := l.regged
	l.mu.Unlock()
	if c == nil || tok == nil {
		return errors.New("the authorization server gave no token")
	}
	rec := &Record{Server: cfg.Name, Fingerprint: cfg.Fingerprint(), ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		Registered: regged, AuthURL: c.Endpoint.AuthURL, TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle),
		RedirectURL: callback, Resource: l.resource(), Scopes: c.Scopes, Token: tok, Authorized: time.Now().UTC()}
	for _, meta := range metas {
		if meta.TokenEndpoint == c.Endpoint.TokenURL {
			rec.Issuer, rec.RevokeURL = meta.Issuer, meta.RevocationEndpoint
		}
	}
	if err := m.store.put(rec); err != nil {
		return fmt.Errorf("storing the token failed: %w", err)
	}
	m.mu.Lock()
	s := m.get(cfg.Name)
	s.rec, s.need, s.challenge = rec, false, nil
	s.notify()
	m.mu.Unlock()
	m.log.Info("upstream authorized", "server", cfg.Name, "issuer", rec.Issuer, "scopes", strings.Join(rec.Scopes, " "))
	m.event(cfg.Name, map[string]string{"state": StateAuthorized, "event": "login"})
	return nil
}

// finish ends l with err (nil: success).
func (m *Manager) finish(l *login, err error) {
	select {
	case <-l.done:
		return
	default:
	}
	if err != nil {
		msg := err.Error()
		for _, s := range l.secrets {
			msg = strings.ReplaceAll(msg, s, "[secret]")
		}
		l.err = fmt.Errorf("login to server %q failed: %s", l.server, msg)
		m.log.Warn("upstream login failed", "server", l.server, "err", l.err)
		m.event(l.server, map[string]string{"event": "login_failed", "error": l.err.Error()})
	}
	l.cancel()
	close(l.done)
}

// Callback is /oauth/callback: where the authorization server sends the
// person back. It takes only the state of a login Warden started and has
// not finished, and answers once the code was exchanged.
func (m *Manager) Callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	m.mu.Lock()
	l := m.logins[q.Get("state")]
	delete(m.logins, q.Get("state")) // one use
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if l == nil || q.Get("state") == "" {
		w.WriteHeader(http.StatusBadRequest)
		page(w, "Warden did not start this login", "This link is not from a login Warden is waiting for (or it was used already). Start one with: warden auth login SERVER")
		return
	}
	res := callbackResult{res: &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}}
	if e := q.Get("error"); e != "" {
		res = callbackResult{err: fmt.Errorf("the authorization server answered %q: %s", e, q.Get("error_description"))}
	} else if res.res.Code == "" {
		res = callbackResult{err: errors.New("the authorization server sent no code")}
	}
	l.code <- res
	select {
	case <-l.done:
	case <-r.Context().Done():
		return
	}
	if l.err != nil {
		w.WriteHeader(http.StatusBadGateway)
		page(w, "Login failed", l.err.Error())
		return
	}
	page(w, "Warden is authorized", fmt.Sprintf("Warden can now reach server %q. You can close this page.", l.server))
}

func page(w io.Writer, title, text string) {
	fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1><p>%s</p>\n", html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}

// Logout revokes name's tokens where the authorization server offers
// revocation (RFC 7009), forgets them, and marks the server needs_login.
// It answers whether a revocation was accepted.
func (m *Manager) Logout(ctx context.Context, cfg *config.Server) (revoked bool, err error) {
	m.mu.Lock()
	s := m.get(cfg.Name)
	rec := s.rec
	if s.login != nil {
		s.login.cancel()
	}
	m.mu.Unlock()
	if rec != nil && rec.RevokeURL != "" {
		revoked = m.revokeAll(ctx, rec)
	}
	if err := m.store.delete(cfg.Name); err != nil {
		return revoked, fmt.Errorf("forgetting the token of server %q failed: %w", cfg.Name, err)
	}
	m.mu.Lock()
	s.rec, s.need, s.challenge, s.stepUps = nil, true, nil, 0
	s.notify()
	m.mu.Unlock()
	m.event(cfg.Name, map[string]string{"state": StateNeedsLogin, "event": "logout"})
	return revoked, nil
}

// Prune forgets the authorization of every server not in configured (the
// servers of the config, broken entries included): its tokens and client
// registration leave the store, and are revoked at the authorization server
// where it offers revocation (best effort, in the background: nothing Warden
// no longer knows should stay usable at the provider). A disabled server is
// still configured and keeps its tokens: enabling it again needs no login.
func (m *Manager) Prune(configured func(server string) bool) {
	m.mu.Lock()
	var gone []*Record
	for name, s := range m.servers {
		if configured(name) {
			continue
		}
		if s.login != nil {
			s.login.cancel()
		}
		if s.rec != nil {
			gone = append(gone, s.rec)
		}
		delete(m.servers, name)
	}
	m.mu.Unlock()
	for _, rec := range gone {
		if err := m.store.delete(rec.Server); err != nil {
			m.log.Error("forgetting the tokens of a server no longer configured failed", "server", rec.Server, "err", err)
			continue
		}
		m.log.Info("server no longer configured: its OAuth tokens are forgotten", "server", rec.Server, "revoked", rec.RevokeURL != "")
		if rec.RevokeURL != "" {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				m.revokeAll(ctx, rec)
			}()
		}
	}
}

// revokeAll revokes rec's tokens, and reports whether every revocation was
// accepted.
func (m *Manager) revokeAll(ctx context.Context, rec *Record) bool {
	revoked := true
	for _, t := range []struct{ tok, hint string }{{rec.Token.RefreshToken, "refresh_token"}, {rec.Token.AccessToken, "access_token"}} {
		if t.tok != "" {
			if err := m.revoke(ctx, rec, t.tok, t.hint); err != nil {
				revoked = false
				m.log.Warn("revoking the upstream's token failed; forgetting it anyway", "server", rec.Server, "err", redact(err, rec))
			}
		}
	}
	return revoked
}

func (m *Manager) revoke(ctx context.Context, rec *Record, tok, hint string) error {
	form := url.Values{"token": {tok}, "token_type_hint": {hint}}
	basic := oauth2.AuthStyle(rec.AuthStyle) == oauth2.AuthStyleInHeader && rec.ClientSecret != ""
	if !basic {
		form.Set("client_id", rec.ClientID)
		if rec.ClientSecret != "" {
			form.Set("client_secret", rec.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.RevokeURL, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(rec.ClientID), url.QueryEscape(rec.ClientSecret))
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return err
	}
	drain(resp)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revocation endpoint answered %s", resp.Status)
	}
	return nil
}

// publicClient moves a token request's client id from Basic credentials
// with no secret into the form, as RFC 6749 has a public client send it.
// The SDK hands a client registered before (a public one: "none") to
// oauth2's auto-detection, whose first try is Basic; an authorization
// server that spends the code on that try would fail every login after the
// first one.
func publicClient(req *http.Request, escapedID string) (*http.Request, error) {
	id, err := url.QueryUnescape(escapedID) // oauth2 escapes Basic credentials
	if err != nil || req.Body == nil {
		return req, nil
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	closeBody(req)
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	form.Set("client_id", id)
	body = []byte(form.Encode())
	r := req.Clone(req.Context())
	r.Header.Del("Authorization")
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return r, nil
}

// observer notes the authorization server metadata and client
// registrations a login's discovery fetches (the SDK handler keeps them to
// itself): the issuer and revocation endpoint are needed later.
type observer struct {
	next http.RoundTripper
	l    *login
}

func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	if id, secret, ok := req.BasicAuth(); ok && secret == "" && req.Method == http.MethodPost {
		var err error
		if req, err = publicClient(req, id); err != nil {
			return nil, err
		}
	}
	resp, err := o.next.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, err
	}
	p := req.URL.Path
	isMeta := strings.Contains(p, "/.well-known/oauth-authorization-server") || strings.Contains(p, "/.well-known/openid-configuration")
	if !isMeta && req.Method != http.MethodPost {
		return resp, nil
	}
	if req.Method == http.MethodPost && !isMeta {
		if req.Header.Get("Content-Type") == "application/json" { // a registration (token requests are forms)
			o.l.mu.Lock()
			o.l.regged = true
			o.l.mu.Unlock()
		}
		return resp, nil
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var meta oauthex.AuthServerMeta
	if rerr == nil && json.Unmarshal(body, &meta) == nil && meta.TokenEndpoint != "" {
		o.l.mu.Lock()
		o.l.metas = append(o.l.metas, &meta)
		o.l.mu.Unlock()
	}
	return resp, nil
}
