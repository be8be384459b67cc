package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
	"github.com/wardenmcp/warden/oauth"
)

// Every route but the OpenAPI document needs the operator token; a refusal
// says where the token is, and never echoes what was sent.
func TestOperatorToken(t *testing.T) {
	e := newEnv(t, `{}`)
	tests := []struct{ name, authorization string }{
		{"none", ""},
		{"wrong token", "Bearer not-the-token"},
		{"a prefix of the token", "Bearer " + testToken[:len(testToken)-1]},
		{"the token and more", "Bearer " + testToken + "x"},
		{"another scheme", "Basic " + testToken},
		{"no scheme", testToken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rt := range routes {
				if rt.public {
					continue
				}
				path := strings.ReplaceAll(rt.path, "{s}", "x")
				rec := e.doAs(rt.method, path, `{}`, tt.authorization)
				expectError(t, rec, refusal{http.StatusUnauthorized, "unauthorized", []string{"Authorization: Bearer", "api-token"}})
				if tt.authorization != "" && strings.Contains(rec.Body.String(), tt.authorization) {
					t.Errorf("%s %s: the refusal echoes the credentials sent", rt.method, path)
				}
			}
		})
	}
	if rec := e.doAs("GET", "/v1/openapi.json", "", ""); rec.Code != http.StatusOK {
		t.Errorf("GET /v1/openapi.json without a token: %d", rec.Code)
	}
}

// A process Warden spawned is refused even with the token; the reason is
// Caller's.
func TestCallerRefused(t *testing.T) {
	e := newEnv(t, `{}`, func(d *Deps) {
		d.Caller = func(r *http.Request) error {
			if r.Header.Get("X-Spawned") != "" {
				return errors.New("this request comes from a process Warden started")
			}
			return nil
		}
		d.Socket = func(r *http.Request) bool { return r.Header.Get("X-Socket") != "" }
	})
	req := httptest.NewRequest("GET", "/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("X-Spawned", "1")
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	expectError(t, rec, refusal{http.StatusForbidden, "forbidden_caller", []string{"process Warden started"}})
	if rec := e.do("GET", "/v1/status", ""); rec.Code != http.StatusOK {
		t.Fatalf("an operator's request: %d %s", rec.Code, rec.Body)
	}
	// On the socket no token is needed, but a spawned caller is refused
	// there too.
	for _, spawned := range []string{"", "1"} {
		req := httptest.NewRequest("GET", "/v1/status", nil)
		req.Header.Set("X-Socket", "1")
		req.Header.Set("X-Spawned", spawned)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if want := map[string]int{"": http.StatusOK, "1": http.StatusForbidden}[spawned]; rec.Code != want {
			t.Errorf("socket request, spawned=%q: %d, want %d", spawned, rec.Code, want)
		}
	}
}

func TestUILogin(t *testing.T) {
	codes := 0
	e := newEnv(t, `{}`, func(d *Deps) {
		d.UILogin = func() (string, error) {
			if codes++; codes > 1 {
				return "", errors.New("no randomness left")
			}
			return "code-1", nil
		}
	})
	var l UILogin
	rec := e.do("POST", "/v1/ui/login", "")
	decodeInto(t, rec, &l)
	if rec.Code != http.StatusOK || l.Code != "code-1" || l.Path != "/ui/login?code=code-1" ||
		l.ExpiresAt.Before(time.Now().Add(UILoginTTL-time.Minute)) || l.ExpiresAt.After(time.Now().Add(UILoginTTL)) {
		t.Fatalf("POST /v1/ui/login: %d %+v", rec.Code, l)
	}
	expectError(t, e.do("POST", "/v1/ui/login", ""), refusal{http.StatusInternalServerError, "ui_error", []string{"no randomness left"}})

	none := newEnv(t, `{}`)
	expectError(t, none.do("POST", "/v1/ui/login", ""), refusal{http.StatusNotFound, "not_found", []string{"no review page"}})
}

// The OAuth routes refuse servers they cannot serve, saying why.
func TestAuthRefusals(t *testing.T) {
	servers := `{"local": {"command": "/nonexistent/warden-test-server"}, "off": {"url": "http://127.0.0.1:1/mcp", "disabled": true},
		"remote": {"url": "http://127.0.0.1:1/mcp"}, "bad": {"url": 5}}`
	e := newEnv(t, servers)
	for _, method := range []string{"GET", "DELETE"} {
		expectError(t, e.do(method, "/v1/servers/local/auth", ""), refusal{http.StatusBadRequest, "not_http", []string{"server local", "stdio", "HTTP servers"}})
		expectError(t, e.do(method, "/v1/servers/off/auth", ""), refusal{http.StatusConflict, "server_disabled", []string{"off is disabled", `remove "disabled": true`}})
		expectError(t, e.do(method, "/v1/servers/bad/auth", ""), refusal{http.StatusConflict, "server_not_loaded", []string{`"bad"`, "cannot be loaded", "mcpServers.bad.url"}})
	}
	expectError(t, e.do("POST", "/v1/servers/local/auth/login", ""), refusal{http.StatusBadRequest, "not_http", []string{"stdio"}})
	// No callback URL yet: the login cannot start.
	expectError(t, e.do("POST", "/v1/servers/remote/auth/login", ""), refusal{http.StatusBadGateway, "login_failed", []string{"not up yet", "retry"}})

	noAuth := newEnv(t, servers, func(d *Deps) { d.Auth = nil })
	expectError(t, noAuth.do("GET", "/v1/servers/remote/auth", ""), refusal{http.StatusNotFound, "not_found", []string{"no OAuth support"}})
}

// A login through the API, played as the person's browser would: the
// status goes from needs_login to authorized, and logout revokes. No
// answer ever holds a token.
func TestAuthLoginAndLogout(t *testing.T) {
	as := fixture.NewAuthServer(t)
	up := fixture.NewServer(fixture.Options{}).ServeBehind(t, as.Protect)
	e := newEnv(t, fmt.Sprintf(`{"hosted": {"url": %q, "trusted": true}}`, up))
	callback := httptest.NewServer(http.HandlerFunc(e.Auth.Callback))
	t.Cleanup(callback.Close)
	e.Auth.SetCallbackURL(callback.URL + "/oauth/callback")

	var shown strings.Builder // every answer, to look for tokens in
	status := func() oauth.Info {
		t.Helper()
		var info oauth.Info
		rec := e.do("GET", "/v1/servers/hosted/auth", "")
		decodeInto(t, rec, &info)
		shown.WriteString(rec.Body.String())
		return info
	}
	parts.WaitFor(t, 30*time.Second, "hosted needs a login", func() bool {
		return e.Gateway.Connection("hosted").State == "needs_login"
	})
	if info := status(); info.State != oauth.StateNeedsLogin || info.Server != "hosted" {
		t.Fatalf("before login: %+v", info)
	}

	var started oauth.LoginStarted
	rec := e.do("POST", "/v1/servers/hosted/auth/login", "")
	decodeInto(t, rec, &started)
	shown.WriteString(rec.Body.String())
	if rec.Code != http.StatusOK || started.ID == "" || !strings.HasPrefix(started.AuthorizationURL, as.URL+"/authorize?") {
		t.Fatalf("POST auth/login: %d %s", rec.Code, rec.Body)
	}
	browse(t, started.AuthorizationURL)
	info := status()
	if info.State != oauth.StateAuthorized || info.Issuer != as.URL || info.ClientID == "" || !info.Refreshable ||
		info.Login == nil || info.Login.State != oauth.LoginDone {
		t.Fatalf("after login: %+v (login %+v)", info, info.Login)
	}
	e.WaitListed(t, "hosted")
	for _, path := range []string{"/v1/status", "/v1/servers", "/v1/servers/hosted", "/v1/sessions", "/v1/activity"} {
		shown.WriteString(e.do("GET", path, "").Body.String())
	}

	var out AuthLogout
	rec = e.do("DELETE", "/v1/servers/hosted/auth", "")
	decodeInto(t, rec, &out)
	shown.WriteString(rec.Body.String())
	if rec.Code != http.StatusOK || out != (AuthLogout{Server: "hosted", Revoked: true}) || as.Revokes() != 2 {
		t.Fatalf("DELETE auth: %d %+v, %d revocations; want revoked (refresh and access token)", rec.Code, out, as.Revokes())
	}
	if info := status(); info.State != oauth.StateNeedsLogin {
		t.Fatalf("after logout: %+v", info)
	}
	issued := as.Issued()
	if len(issued) == 0 {
		t.Fatal("the authorization server issued no token")
	}
	for _, tok := range issued {
		if strings.Contains(shown.String(), tok) {
			t.Fatalf("an answer shows a token:\n%s", shown.String())
		}
	}
}

// browse follows an authorization URL as a browser: the authorization
// server redirects to the callback, which must answer 200.
func browse(t *testing.T, authorizationURL string) {
	t.Helper()
	resp, err := http.Get(authorizationURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		u, _ := url.Parse(authorizationURL)
		t.Fatalf("following the authorization URL (%s) ended with %d", u.Host, resp.StatusCode)
	}
}
