package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/idp"
	"github.com/wardenmcp/warden/store"
)

// idpLogin is a Warden's review page whose operators log in at a real
// OpenID provider (package idp): rita is a reviewer by her group
// "security", ada an admin by name, bob (group eng) no operator.
type idpLogin struct {
	t    *testing.T
	prov *idp.Provider
	u    *UI
	pol  *callers.Policy // the live known callers; setOperators changes it
}

const publicURL = "https://warden.test"

func newIdPLogin(t *testing.T, api http.Handler) *idpLogin {
	t.Helper()
	prov := idp.Start(t)
	prov.AddPublicClient("warden-ui", publicURL+callers.LoginCallbackPath)
	prov.AddPerson(idp.Person{Name: "rita", Password: "r-pw", Groups: []string{"security"}})
	prov.AddPerson(idp.Person{Name: "ada", Password: "a-pw"})
	prov.AddPerson(idp.Person{Name: "bob", Password: "b-pw", Groups: []string{"eng"}})
	// The provider's connections, kept alive by the default transport,
	// are closed before the package's leak check.
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	l := &idpLogin{t: t, prov: prov}
	l.setOperators(config.Operator{Group: "security", Role: config.RoleReviewer}, config.Operator{User: "ada", Role: config.RoleAdmin})
	l.u = &UI{API: api, Store: openStore(t, filepath.Join(t.TempDir(), "warden.db")), Callers: func() *callers.Policy { return l.pol }}
	return l
}

// setOperators makes ops the config's "operators".
func (l *idpLogin) setOperators(ops ...config.Operator) {
	l.pol = callers.New(&config.Config{PublicURL: publicURL,
		Auth:      &config.Auth{Issuer: l.prov.Issuer, Audience: publicURL + "/mcp", UserClaim: "sub", GroupsClaim: "groups", UIClient: "warden-ui"},
		Operators: ops})
}

// start asks u to log in: the provider's authorization URL, and the
// browser's login cookie.
func (l *idpLogin) start(u *UI) (string, *http.Cookie) {
	l.t.Helper()
	w := serve(u, "GET", loginStartPath, "", nil)
	to := w.Header().Get("Location")
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(to, l.prov.Issuer+"/") {
		l.t.Fatalf("start: %d to %q: %s", w.Code, to, w.Body)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == loginCookie && c.HttpOnly && c.SameSite == http.SameSiteLaxMode && c.Path == callers.LoginCallbackPath {
			return to, c
		}
	}
	l.t.Fatalf("start set no login cookie: %v", w.Result().Cookies())
	return "", nil
}

// comeBack brings the browser back to u's callback at URL to, with cookie.
func comeBack(u *UI, to *url.URL, cookie *http.Cookie) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", to.RequestURI(), nil)
	if cookie != nil {
		r.AddCookie(cookie)
	}
	w := httptest.NewRecorder()
	u.ServeHTTP(w, r)
	return w
}

// sessionCookie is the session cookie w sets, nil if none.
func sessionCookie(w *httptest.ResponseRecorder) *http.Cookie {
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName && c.MaxAge > 0 {
			return c
		}
	}
	return nil
}

// A person "operators" names logs in at the identity provider, started on
// one instance and finished on another, and gets a session as that
// operator: the page names them, offers no admin actions, and the API it
// calls for them refuses what their role may not do.
func TestIdPLoginAsOperator(t *testing.T) {
	// Reads are answered by the fake, decisions judged by the real API.
	m := http.NewServeMux()
	m.Handle("GET /", &fakeAPI{})
	m.Handle("/", api.Handler(api.Deps{Version: "test"}))
	l := newIdPLogin(t, m)
	if w := serve(l.u, "GET", "/ui/", "", nil); w.Code != http.StatusUnauthorized ||
		!strings.Contains(w.Body.String(), `href="/ui/login/idp">Log in with `+l.prov.Issuer) || !strings.Contains(w.Body.String(), "warden ui") {
		t.Fatalf("the login page: %d %s", w.Code, w.Body)
	}
	two := &UI{API: l.u.API, Store: l.u.Store, Callers: l.u.Callers}
	authURL, cookie := l.start(l.u)
	w := comeBack(two, l.prov.SignIn(t, authURL, "rita", "r-pw"), cookie)
	sc := sessionCookie(w)
	if w.Code != http.StatusOK || sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode {
		t.Fatalf("callback: %d %v %s", w.Code, w.Result().Cookies(), w.Body)
	}
	r := httptest.NewRequest("GET", "/ui/", nil)
	r.AddCookie(sc)
	if s, err := l.u.session(r); err != nil || s == nil || s.Operator != (callers.Operator{Name: "rita", Role: config.RoleReviewer}) {
		t.Fatalf("the session: %+v %v", s, err)
	}
	page := serve(l.u, "GET", "/ui/writes/s/clear", sc.Value, nil).Body.String()
	if !strings.Contains(page, `<span id="who"`) || !strings.Contains(page, "rita (reviewer)") || strings.Contains(page, "confirm-clear") || !strings.Contains(page, "clear-needs-admin") {
		t.Fatalf("a reviewer's confirmation page: %s", page)
	}
	form := url.Values{"csrf": {csrfOf(t, l.u, sc)}}
	if w := serve(l.u, "POST", "/ui/writes/s/clear", sc.Value, form); w.Code != http.StatusSeeOther {
		t.Fatalf("forced clear: %d", w.Code)
	}
	page = serve(l.u, "GET", "/ui/writes", sc.Value, nil).Body.String()
	if !strings.Contains(page, `operator &#34;rita&#34; (reviewer) may not DELETE /v1/writes/s: that needs the admin role`) {
		t.Fatalf("the forced clear's flash: %s", page)
	}
}

// A login's state works once, only in the browser that started it; a
// login the provider refused, a code it does not know, and an ID token
// with another nonce each get a page saying so, and no session.
func TestIdPLoginRefusals(t *testing.T) {
	l := newIdPLogin(t, &fakeAPI{})
	authURL, cookie := l.start(l.u)
	to := l.prov.SignIn(t, authURL, "ada", "a-pw")
	otherURL, other := l.start(l.u)
	cases := []struct {
		name   string
		to     *url.URL
		cookie *http.Cookie
		status int
		says   string
	}{
		{"no login cookie", to, nil, http.StatusBadRequest, "not started in this browser"},
		{"another login's cookie", to, other, http.StatusBadRequest, "not started in this browser"},
		{"first", to, cookie, http.StatusOK, "Logged in"},
		{"replayed", to, cookie, http.StatusBadRequest, "finished already"},
	}
	for _, c := range cases {
		w := comeBack(l.u, c.to, c.cookie)
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.says) || (sessionCookie(w) != nil) != (c.status == http.StatusOK) {
			t.Errorf("%s: %d %v %s", c.name, w.Code, w.Result().Cookies(), w.Body)
		}
	}

	// The provider sends back an error, or a code it never gave.
	state := func(u string) string { p, _ := url.Parse(u); return p.Query().Get("state") }
	denied, _ := url.Parse(callers.LoginCallbackPath + "?error=access_denied&error_description=the+person+declined&state=" + state(otherURL))
	if w := comeBack(l.u, denied, other); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "did not log you in (access_denied: the person declined)") {
		t.Errorf("access denied: %d %s", w.Code, w.Body)
	}
	bogusURL, bogus := l.start(l.u)
	forged, _ := url.Parse(callers.LoginCallbackPath + "?code=forged&state=" + state(bogusURL))
	if w := comeBack(l.u, forged, bogus); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "refused the login&#39;s code (invalid_grant") {
		t.Errorf("forged code: %d %s", w.Code, w.Body)
	}

	// The browser is sent to the provider with this login's state and
	// verifier, but another nonce (as a replayed ID token would hold).
	nonceURL, nc := l.start(l.u)
	var p pending
	err := l.u.Store.View(context.Background(), func(tx store.Tx) (err error) {
		p, err = readLogin(tx, storeKey(state(nonceURL)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	swapped, err := l.u.idp().AuthURL(context.Background(), state(nonceURL), "another nonce", p.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	if w := comeBack(l.u, l.prov.SignIn(t, swapped, "ada", "a-pw"), nc); w.Code != http.StatusUnauthorized || sessionCookie(w) != nil || !strings.Contains(w.Body.String(), "its nonce differs") {
		t.Errorf("another nonce: %d %s", w.Code, w.Body)
	}
}

// A person the provider knows but "operators" names neither by name nor
// by group gets no session, and a page saying what an admin adds.
func TestIdPLoginNotOperator(t *testing.T) {
	l := newIdPLogin(t, &fakeAPI{})
	authURL, cookie := l.start(l.u)
	w := comeBack(l.u, l.prov.SignIn(t, authURL, "bob", "b-pw"), cookie)
	body := w.Body.String()
	if w.Code != http.StatusForbidden || sessionCookie(w) != nil || !strings.Contains(body, "<strong>bob</strong> (groups: eng)") ||
		!strings.Contains(body, `{"user": "bob", "role": "reviewer"}`) {
		t.Fatalf("not an operator: %d %v %s", w.Code, w.Result().Cookies(), body)
	}
}

// A session begun at the provider acts with the role "operators" gives
// its person now: a change of the config applies to it, and a person
// taken out of "operators" is logged out. The local operator's session
// does not depend on "operators".
func TestIdPSessionFollowsOperators(t *testing.T) {
	l := newIdPLogin(t, &fakeAPI{})
	local := login(t, l.u)
	authURL, cookie := l.start(l.u)
	sc := sessionCookie(comeBack(l.u, l.prov.SignIn(t, authURL, "rita", "r-pw"), cookie))
	if sc == nil {
		t.Fatal("rita got no session")
	}
	l.setOperators(config.Operator{Group: "security", Role: config.RoleAdmin})
	if w := serve(l.u, "GET", "/ui/", sc.Value, nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "rita (admin)") {
		t.Fatalf("rita made an admin: %d %s", w.Code, w.Body)
	}
	l.setOperators(config.Operator{User: "ada", Role: config.RoleAdmin})
	if w := serve(l.u, "GET", "/ui/", sc.Value, nil); w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "secret-server") {
		t.Fatalf("rita taken out of operators: %d %s", w.Code, w.Body)
	}
	if w := serve(l.u, "GET", "/ui/", local.Value, nil); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "local (admin)") {
		t.Fatalf("the local operator: %d %s", w.Code, w.Body)
	}
}

// Starting a login needs no credentials: past maxLogins under way, a start
// is refused, saying so, until one is finished.
func TestIdPLoginsBounded(t *testing.T) {
	l := newIdPLogin(t, &fakeAPI{})
	defer func(n int) { maxLogins = n }(maxLogins)
	maxLogins = 2
	authURL, cookie := l.start(l.u)
	l.start(l.u)
	if w := serve(l.u, "GET", loginStartPath, "", nil); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "too many logins are under way") {
		t.Fatalf("a third start: %d %s", w.Code, w.Body)
	}
	if w := comeBack(l.u, l.prov.SignIn(t, authURL, "ada", "a-pw"), cookie); sessionCookie(w) == nil {
		t.Fatalf("finishing the first: %d %s", w.Code, w.Body)
	}
	l.start(l.u)
}
