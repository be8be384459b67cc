package oauth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/upstream"
)

// The tests here log in for real: fixture.AuthServer is an OAuth 2.1
// authorization server (RFC 8414 and RFC 9728 discovery, dynamic client
// registration, PKCE, refresh with rotation, RFC 7009 revocation) guarding
// a fixture MCP endpoint; the test plays the person's browser by following
// the authorization URL, whose redirect lands on the Manager's Callback.
// (The Go SDK's own authorization server for tests is internal to it.)

// env is a Manager over a store in a temp dir, with the upstream, its
// authorization server and Warden's callback served on loopback.
type env struct {
	t      *testing.T
	db     store.Store
	m      *Manager
	as     *fixture.AuthServer
	cfg    *config.Server
	mcp    http.Handler // the MCP endpoint
	front  *switchable  // what serves it: as.Protect(mcp) unless replaced
	logs   *testenv.Buffer
	mu     sync.Mutex
	events []map[string]string
}

// switchable serves whatever handler it holds now.
type switchable struct{ h atomic.Pointer[http.Handler] }

func (s *switchable) set(h http.Handler) { s.h.Store(&h) }
func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, openStore(t, store.Options{Path: filepath.Join(t.TempDir(), "db")}))
}

// openStore opens a store closed at the end of t.
func openStore(t *testing.T, o store.Options) store.Store {
	t.Helper()
	o.Key = "a test key, not a secret"
	db, err := store.Open(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newEnvOn is newEnv over db.
func newEnvOn(t *testing.T, db store.Store) *env {
	t.Helper()
	e := &env{t: t, db: db, as: fixture.NewAuthServer(t), front: &switchable{}, logs: &testenv.Buffer{}}
	url := fixture.NewServer(fixture.Options{}).ServeBehind(t, func(h http.Handler) http.Handler {
		e.mcp = h
		e.front.set(e.as.Protect(h))
		return e.front
	})
	e.cfg = &config.Server{Name: "hosted", URL: url, Transport: config.TransportHTTP}
	e.m = e.open()
	callback := httptest.NewServer(http.HandlerFunc(e.m.Callback))
	t.Cleanup(callback.Close)
	e.m.SetCallbackURL(callback.URL + "/oauth/callback")
	t.Cleanup(func() {
		// No token, in the log or an event, whatever the test did.
		e.mu.Lock()
		shown := e.logs.String() + strings.Join(slices.Concat(flatten(e.events)...), " ")
		e.mu.Unlock()
		for _, tok := range e.as.Issued() {
			if strings.Contains(shown, tok) {
				t.Errorf("a token was logged or published:\n%s", shown)
			}
		}
	})
	return e
}

// open opens a Manager on the env's store, as a start of Warden does.
func (e *env) open() *Manager { return e.openOn(e.db) }

// openOn opens a Manager on db: another instance, when db is another
// handle on a shared store.
func (e *env) openOn(db store.Store) *Manager {
	m, err := Open(context.Background(), db, Options{Logger: slog.New(slog.NewTextHandler(e.logs, nil)), Event: func(server string, data map[string]string) {
		e.mu.Lock()
		e.events = append(e.events, data)
		e.mu.Unlock()
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func flatten(events []map[string]string) [][]string {
	var out [][]string
	for _, ev := range events {
		for k, v := range ev {
			out = append(out, []string{k, v})
		}
	}
	return out
}

// login logs in as the person would: start, open the URL, come back.
func (e *env) login() {
	e.t.Helper()
	started, err := e.m.Login(context.Background(), e.cfg)
	if err != nil {
		e.t.Fatalf("Login: %v", err)
	}
	if code := browse(e.t, started.AuthorizationURL); code != http.StatusOK {
		e.t.Fatalf("the callback answered %d; login %+v", code, e.m.Status(e.cfg).Login)
	}
}

// browse follows an authorization URL as a browser does, and answers the
// status the page it ends on (Warden's callback) has.
func browse(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// call sends an MCP initialize to the upstream through the Manager's
// transport, as Warden's upstream connection does.
func (e *env) call() (*http.Response, error) { return e.callWith(e.m) }

// callWith is call through m's transport.
func (e *env) callWith(m *Manager) (*http.Response, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, e.cfg.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := m.Transport(e.cfg, http.DefaultTransport).RoundTrip(req)
	if err == nil {
		drain(resp)
	}
	return resp, err
}

// mustCall fails the test unless a call goes through.
func (e *env) mustCall() {
	e.t.Helper()
	if resp, err := e.call(); err != nil || resp.StatusCode != http.StatusOK {
		e.t.Fatalf("a call after login: %v %v", resp, err)
	}
}

// rec is the record the store holds for the server.
func (e *env) rec() *Record {
	_, recs, err := openRecords(context.Background(), e.db)
	if err != nil {
		e.t.Fatal(err)
	}
	return recs[e.cfg.Name]
}

// A server that refuses Warden needs a login; after one, through discovery
// and dynamic registration, its calls carry the token, and the
// authorization is in the store for the next start.
func TestLoginThenCallsCarryTheToken(t *testing.T) {
	e := newEnv(t)
	if got := e.m.Status(e.cfg).State; got != StateNone {
		t.Fatalf("before any call: %s, want %s", got, StateNone)
	}
	if _, err := e.call(); !errors.Is(err, upstream.ErrAuthRequired) {
		t.Fatalf("a call before login: %v, want ErrAuthRequired", err)
	}
	if need, _ := e.m.NeedsLogin(e.cfg.Name); !need {
		t.Fatal("a refused server is not marked needs_login")
	}
	e.login()
	info := e.m.Status(e.cfg)
	if info.State != StateAuthorized || info.Issuer != e.as.URL || info.ClientID == "" || !info.Refreshable ||
		info.ExpiresAt == nil || info.AuthorizedAt == nil || info.Login == nil || info.Login.State != LoginDone ||
		!slices.Contains(info.Scopes, "tools") {
		t.Fatalf("after login: %+v (login %+v)", info, info.Login)
	}
	if need, _ := e.m.NeedsLogin(e.cfg.Name); need {
		t.Fatal("still needs_login after a login")
	}
	e.mustCall()
	if rec := e.rec(); rec == nil || !rec.Registered || rec.RevokeURL != e.as.URL+"/revoke" || rec.Resource != e.cfg.URL {
		t.Fatalf("stored: %+v; want a registered client, the revocation endpoint and the resource", rec)
	}
	if info := e.open().Status(e.cfg); info.State != StateAuthorized {
		t.Fatalf("after a restart: %+v", info)
	}
	other := *e.cfg
	other.URL += "/elsewhere" // the token is for the URL it was issued for
	if info := e.m.Status(&other); info.State == StateAuthorized {
		t.Fatalf("a server at another URL shows the authorization: %+v", info)
	}
}

// A second login offers the client registered before instead of
// registering again, sending its id in the form, as a public client does.
func TestSecondLoginReusesTheRegisteredClient(t *testing.T) {
	e := newEnv(t)
	e.login()
	first := e.rec().ClientID
	e.login()
	if n := e.as.Registrations(); n != 1 {
		t.Fatalf("%d registrations for two logins, want 1", n)
	}
	if got := e.rec().ClientID; got != first {
		t.Fatalf("client %s after the second login, want %s again", got, first)
	}
	e.mustCall()
}

// Logout revokes both tokens at the authorization server, forgets them,
// and leaves the server needing a login.
func TestLogoutRevokesAndForgets(t *testing.T) {
	e := newEnv(t)
	e.login()
	revoked, err := e.m.Logout(context.Background(), e.cfg)
	if err != nil || !revoked || e.as.Revokes() != 2 {
		t.Fatalf("Logout: %v, revoked %v, %d revocations; want both tokens revoked", err, revoked, e.as.Revokes())
	}
	if got := e.m.Status(e.cfg).State; got != StateNeedsLogin {
		t.Fatalf("after logout: %s", got)
	}
	if e.rec() != nil {
		t.Fatal("the store still holds the authorization")
	}
	if _, err := e.call(); !errors.Is(err, upstream.ErrAuthRequired) {
		t.Fatalf("a call after logout: %v, want ErrAuthRequired", err)
	}
}

// A token about to expire is refreshed before the request leaves, with
// the resource parameter, and the new one is stored; an access token the
// server no longer takes (401) is refreshed and the request sent again.
func TestRefresh(t *testing.T) {
	e := newEnv(t)
	e.login()
	old := e.rec().Token

	e.m.mu.Lock()
	soon := *e.m.servers[e.cfg.Name].rec
	tok := *soon.Token
	tok.Expiry = time.Now().Add(refreshEarly / 2)
	soon.Token = &tok
	e.m.servers[e.cfg.Name].rec = &soon
	e.m.mu.Unlock()
	e.mustCall()
	if n := e.as.Refreshes(); n != 1 {
		t.Fatalf("%d refreshes of a token about to expire, want 1", n)
	}
	stored := e.rec().Token
	if stored.AccessToken == old.AccessToken || stored.RefreshToken == old.RefreshToken {
		t.Fatal("the refreshed (rotated) tokens are not in the store")
	}
	if res := e.as.Resources(); res[len(res)-1] != e.cfg.URL {
		t.Fatalf("the refresh asked for resource %q, want %q", res[len(res)-1], e.cfg.URL)
	}

	e.as.ExpireAccess()
	e.mustCall()
	if n := e.as.Refreshes(); n != 2 {
		t.Fatalf("%d refreshes after a 401, want 2", n)
	}
	if info := e.m.Status(e.cfg); info.State != StateAuthorized {
		t.Fatalf("after the refreshes: %+v", info)
	}
}

// A refresh token the authorization server refuses (invalid_grant: the
// person revoked Warden) is dropped, in the store too: the server needs a
// login, and later requests do not try it again.
func TestInvalidGrantDropsTheRefreshToken(t *testing.T) {
	e := newEnv(t)
	e.login()
	e.as.RevokeAll()
	for range 2 {
		if _, err := e.call(); !errors.Is(err, upstream.ErrAuthRequired) {
			t.Fatalf("a call after the grant was revoked: %v, want ErrAuthRequired", err)
		}
	}
	if n := e.as.RefusedRefreshes(); n != 1 {
		t.Fatalf("%d refused refreshes for two calls, want 1", n)
	}
	if info := e.m.Status(e.cfg); info.State != StateNeedsLogin || info.Refreshable {
		t.Fatalf("after invalid_grant: %+v; want needs_login, not refreshable", info)
	}
	if rec := e.rec(); rec == nil || rec.Token.RefreshToken != "" {
		t.Fatalf("stored after invalid_grant: %+v; want the record without its refresh token", rec)
	}
	e.login() // and a login mends it
	e.mustCall()
}

// A refresh that fails for another reason keeps the login: a token about
// to expire is used as it is when the authorization server cannot be
// reached or answers an error of its own.
func TestRefreshFailureKeepsTheLogin(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"temporarily_unavailable"}`))
	}))
	defer busy.Close()
	for _, tokenURL := range []string{down.URL, busy.URL} {
		e := newEnv(t)
		e.login()
		e.m.mu.Lock()
		soon := *e.m.servers[e.cfg.Name].rec
		tok := *soon.Token
		tok.Expiry = time.Now().Add(refreshEarly / 2)
		soon.Token, soon.TokenURL = &tok, tokenURL
		e.m.servers[e.cfg.Name].rec = &soon
		e.m.mu.Unlock()
		if err := e.m.store.put(&soon); err != nil { // the refresh starts from the stored record
			t.Fatal(err)
		}
		e.mustCall() // with the access token it has, still valid
		if info := e.m.Status(e.cfg); info.State != StateAuthorized || !info.Refreshable {
			t.Fatalf("token endpoint %s: after the failed refresh %+v, want the login kept", tokenURL, info)
		}
	}
}

// The callback takes only the state of a login Warden is waiting for, once;
// the authorization server's refusal, or an answer without a code, fails
// the login with why.
func TestCallback(t *testing.T) {
	e := newEnv(t)
	callback := func(q url.Values) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		e.m.Callback(rec, httptest.NewRequest(http.MethodGet, "/oauth/callback?"+q.Encode(), nil))
		return rec
	}
	if rec := callback(url.Values{"state": {"forged"}, "code": {"c"}}); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "did not start this login") {
		t.Fatalf("an unknown state: %d %s", rec.Code, rec.Body)
	}
	for _, c := range []struct {
		name  string
		query url.Values
		want  string
	}{
		{"refused", url.Values{"error": {"access_denied"}, "error_description": {"the person said no"}}, `answered "access_denied": the person said no`},
		{"no code", url.Values{}, "sent no code"},
	} {
		started, err := e.m.Login(context.Background(), e.cfg)
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(started.AuthorizationURL)
		c.query.Set("state", u.Query().Get("state"))
		rec := callback(c.query)
		if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "Login failed") {
			t.Errorf("%s: the callback answered %d %s", c.name, rec.Code, rec.Body)
		}
		info := e.m.Status(e.cfg)
		if info.Login == nil || info.Login.State != LoginFailed || info.Login.ID != started.ID || !strings.Contains(info.Login.Error, c.want) {
			t.Errorf("%s: login %+v, want failed saying %q", c.name, info.Login, c.want)
		}
		if rec := callback(c.query); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: the state was taken a second time: %d", c.name, rec.Code)
		}
	}
}

// A login that cannot start says why: a stdio server, no listener yet, a
// server that cannot be reached, or one that forbids Warden without
// asking for a scope.
func TestLoginRefusals(t *testing.T) {
	e := newEnv(t)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	forbids := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer forbids.Close()
	for _, c := range []struct {
		name     string
		cfg      *config.Server
		callback string
		want     string
	}{
		{"stdio", &config.Server{Name: "local", Command: "x", Transport: config.TransportStdio}, "http://127.0.0.1:1/oauth/callback", "stdio server"},
		{"no listener", e.cfg, "", "not up yet"},
		{"unreachable", &config.Server{Name: "down", URL: down.URL, Transport: config.TransportHTTP}, "http://127.0.0.1:1/oauth/callback", "reaching server"},
		{"forbidden", &config.Server{Name: "forbids", URL: forbids.URL, Transport: config.TransportHTTP}, "http://127.0.0.1:1/oauth/callback", "403 Forbidden without asking for a scope"},
	} {
		e.m.SetCallbackURL(c.callback)
		if _, err := e.m.Login(context.Background(), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Login answered %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// A server that answers 403 insufficient_scope needs a login for more
// scope, which asks for what it names and keeps what was granted; after
// maxStepUps such logins in a row, another is refused as useless.
func TestStepUpIsBounded(t *testing.T) {
	e := newEnv(t)
	e.front.set(e.as.Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="admin"`)
		http.Error(w, "more scope", http.StatusForbidden)
	})))
	e.login()
	for i := range maxStepUps + 1 {
		if _, err := e.call(); !errors.Is(err, upstream.ErrAuthRequired) {
			t.Fatalf("a call without enough scope: %v, want ErrAuthRequired", err)
		}
		started, err := e.m.Login(context.Background(), e.cfg)
		if i == maxStepUps {
			if err == nil || !strings.Contains(err.Error(), "more logins will not help") {
				t.Fatalf("login %d for more scope: %v, want a refusal", i+1, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("login %d for more scope: %v", i+1, err)
		}
		u, _ := url.Parse(started.AuthorizationURL)
		if scopes := strings.Fields(u.Query().Get("scope")); !slices.Contains(scopes, "admin") || !slices.Contains(scopes, "tools") {
			t.Fatalf("login %d asked for %q, want admin and the tools granted before", i+1, scopes)
		}
		if code := browse(t, started.AuthorizationURL); code != http.StatusOK {
			t.Fatalf("login %d: the callback answered %d", i+1, code)
		}
	}
}

// Configured scopes are asked for instead of the discovered ones.
func TestConfiguredScopes(t *testing.T) {
	e := newEnv(t)
	e.cfg.OAuth = &config.OAuth{Scopes: []string{"read:all"}}
	started, err := e.m.Login(context.Background(), e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(started.AuthorizationURL)
	if got := strings.Fields(u.Query().Get("scope")); !slices.Contains(got, "read:all") || slices.Contains(got, "tools") {
		t.Fatalf("asked for scope %q, want the configured read:all instead of the discovered tools", got)
	}
	if code := browse(t, started.AuthorizationURL); code != http.StatusOK {
		t.Fatalf("the callback answered %d", code)
	}
}

// When the server names another authorization server than the one
// Warden's client was registered with, the login registers with the new
// one instead of failing.
func TestLoginFollowsAMovedAuthorizationServer(t *testing.T) {
	e := newEnv(t)
	e.login()
	moved := fixture.NewAuthServer(t)
	e.front.set(moved.Protect(e.mcp))
	if _, err := e.call(); !errors.Is(err, upstream.ErrAuthRequired) {
		t.Fatalf("a call with the old server's token: %v, want ErrAuthRequired", err)
	}
	e.login()
	if info := e.m.Status(e.cfg); info.State != StateAuthorized || info.Issuer != moved.URL || moved.Registrations() != 1 {
		t.Fatalf("after the move: %+v, %d registrations at the new server; want authorized by it", info, moved.Registrations())
	}
	e.mustCall()
}

// Prune forgets, and revokes in the background, the authorizations of
// servers no longer configured; a configured one keeps its own.
func TestPrune(t *testing.T) {
	e := newEnv(t)
	e.login()
	e.m.Prune(func(name string) bool { return name == e.cfg.Name })
	if e.rec() == nil || e.as.Revokes() != 0 {
		t.Fatal("a configured server's authorization was pruned")
	}
	e.m.Prune(func(string) bool { return false })
	if e.rec() != nil {
		t.Fatal("the store still holds the authorization of a server no longer configured")
	}
	testenv.WaitFor(t, 10*time.Second, "both tokens revoked", func() bool { return e.as.Revokes() == 2 })
	if got := e.m.Status(e.cfg).State; got != StateNone {
		t.Fatalf("a pruned server's state: %s", got)
	}
}

// A revocation carries the client's credentials as the client
// authenticates: a public client its id in the form, a confidential one
// its secret in the form or in Basic credentials; a refused one is
// reported.
func TestRevokeCredentials(t *testing.T) {
	var mu sync.Mutex
	var got []string
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, basic := r.BasicAuth()
		mu.Lock()
		got = append(got, strings.Join([]string{r.PostForm.Get("token_type_hint"), r.PostForm.Get("client_id"), r.PostForm.Get("client_secret"), id, secret, map[bool]string{true: "basic"}[basic]}, "|"))
		no := refuse
		mu.Unlock()
		if no {
			http.Error(w, "no", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	e := newEnv(t)
	for _, c := range []struct {
		name    string
		rec     Record
		refused bool
		want    []string
	}{
		{"public", Record{ClientID: "pub"}, false, []string{"refresh_token|pub||||", "access_token|pub||||"}},
		{"secret in the form", Record{ClientID: "conf", ClientSecret: "s3cret", AuthStyle: 1}, false, []string{"refresh_token|conf|s3cret|||", "access_token|conf|s3cret|||"}},
		{"secret in Basic", Record{ClientID: "c d", ClientSecret: "s3cret", AuthStyle: 2}, false, []string{"refresh_token|||c+d|s3cret|basic", "access_token|||c+d|s3cret|basic"}},
		{"refused", Record{ClientID: "pub"}, true, []string{"refresh_token|pub||||", "access_token|pub||||"}},
	} {
		mu.Lock()
		got, refuse = nil, c.refused
		mu.Unlock()
		rec := c.rec
		rec.Server, rec.RevokeURL = "s", srv.URL
		rec.Token = &oauth2.Token{AccessToken: "access-1", RefreshToken: "refresh-1"}
		if revoked := e.m.revokeAll(context.Background(), &rec); revoked == c.refused {
			t.Errorf("%s: revoked = %v", c.name, revoked)
		}
		mu.Lock()
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: the endpoint got %q, want %q", c.name, got, c.want)
		}
		mu.Unlock()
	}
}

// redact masks the record's secrets in an error's text.
func TestRedact(t *testing.T) {
	rec := &Record{ClientSecret: "client-secret", Token: &oauth2.Token{AccessToken: "access-token", RefreshToken: "abc"}}
	got := redact(errors.New("posting client-secret and access-token failed (abc)"), rec)
	if want := "posting [secret] and [secret] failed (abc)"; got != want {
		t.Fatalf("redact = %q, want %q (secrets under 4 characters are left)", got, want)
	}
}
