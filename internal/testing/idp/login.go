package idp

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// People log in with the authorization code grant: a public client (no
// secret; PKCE with S256 required) sends the browser to the provider,
// which shows its login form (a plain HTML form a browser or SignIn
// fills), then redirects back with a code. The ID token names the person
// in "sub" (their name) and lists their groups in "groups".

// Person is someone who logs in with a name and password.
type Person struct {
	Name, Password string
	Groups         []string // the ID token's "groups" claim
}

// loginPath is where the provider's login form is: the example clients'
// login URL (storage.NativeClient).
const loginPath = "/login/username"

// AddPerson lets p log in.
func (p *Provider) AddPerson(person Person) { p.store.people.add(person) }

// AddPublicClient registers a public client: id, with the redirect URIs
// its authorization requests may name.
func (p *Provider) AddPublicClient(id string, redirectURIs ...string) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.public[id] = storage.NativeClient(id, redirectURIs...)
}

// people is the provider's user store: each person's id is their name.
type people struct {
	mu     sync.Mutex
	byName map[string]Person
}

func (pp *people) add(p Person) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.byName[p.Name] = p
}

func (pp *people) person(name string) (Person, bool) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	p, ok := pp.byName[name]
	return p, ok
}

func (pp *people) GetUserByID(id string) *storage.User { return pp.GetUserByUsername(id) }

func (pp *people) GetUserByUsername(name string) *storage.User {
	p, ok := pp.person(name)
	if !ok {
		return nil
	}
	return &storage.User{ID: p.Name, Username: p.Name, Password: p.Password}
}

func (pp *people) ExampleClientID() string { return "" }

// GetClientByClientID finds a public client (the example storage's own
// clients are a package variable, shared by every provider of the test
// binary: none are used).
func (s *agents) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.public[id]
	if !ok {
		return nil, fmt.Errorf("no client %q", id)
	}
	return c, nil
}

// CreateAuthRequest refuses an authorization request without an S256 code
// challenge (op accepts "plain" too).
func (s *agents) CreateAuthRequest(ctx context.Context, r *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	if r.CodeChallengeMethod != oidc.CodeChallengeMethodS256 {
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE with code_challenge_method=S256 is required")
	}
	return s.Storage.CreateAuthRequest(ctx, r, userID)
}

// SetUserinfoFromRequest puts the person's groups in their ID token.
func (s *agents) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, r op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, r, scopes); err != nil {
		return err
	}
	if p, ok := s.people.person(r.GetSubject()); ok {
		info.AppendClaims("groups", p.Groups)
	}
	return nil
}

// loginPage is the provider's login form: GET shows it for an
// authorization request, POST checks the name and password and sends the
// browser on to complete the request.
type loginPage struct {
	storage  *agents
	callback func(ctx context.Context, authRequestID string) string
}

var loginForm = template.Must(template.New("").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Log in · test provider</title></head>
<body><h1>Log in</h1>{{with .Problem}}<p id="problem">{{.}}</p>{{end}}
<form method="post" action="` + loginPath + `"><input type="hidden" name="id" value="{{.ID}}">
<label>Name <input id="username" name="username"></label>
<label>Password <input id="password" name="password" type="password"></label>
<button id="submit" type="submit">Log in</button></form></body></html>`))

func (l *loginPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := r.Form.Get("authRequestID")
	if r.Method == http.MethodPost {
		id = r.PostForm.Get("id")
		err := l.storage.CheckUsernamePassword(r.PostForm.Get("username"), r.PostForm.Get("password"), id)
		if err == nil {
			http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		_ = loginForm.Execute(w, struct{ ID, Problem string }{id, err.Error()})
		return
	}
	_ = loginForm.Execute(w, struct{ ID, Problem string }{id, ""})
}

// SignIn plays the browser for a client's authorization request authURL:
// it follows the provider's redirects to its login form, logs in as name
// with password, and returns where the provider then sends the browser
// (the client's redirect URI, with code and state, or error).
func (p *Provider) SignIn(t testing.TB, authURL, name, password string) *url.URL {
	t.Helper()
	issuer, _ := url.Parse(p.Issuer)
	var left *url.URL // the first redirect away from the provider
	c := &http.Client{CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if r.URL.Host != issuer.Host {
			left = r.URL
			return http.ErrUseLastResponse
		}
		return nil
	}}
	do := func(resp *http.Response, err error) *http.Response {
		t.Helper()
		if err != nil {
			t.Fatalf("signing in as %s: %v", name, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := do(c.Get(authURL))
	if left != nil {
		return left // refused before the form (error=...)
	}
	id := resp.Request.URL.Query().Get("authRequestID")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("signing in as %s: the provider did not show its login form: %s at %s", name, resp.Status, resp.Request.URL)
	}
	resp = do(c.PostForm(p.Issuer+loginPath, url.Values{"id": {id}, "username": {name}, "password": {password}}))
	if left == nil {
		t.Fatalf("signing in as %s: the provider did not send the browser back: %s", name, resp.Status)
	}
	return left
}
