package ui

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wardenmcp/warden/approval"
)

// fakeAPI answers the REST API's reads with empty lists and records every
// request it gets.
type fakeAPI struct {
	mu   sync.Mutex
	seen []string // "METHOD PATH BODY"
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.seen = append(f.seen, r.Method+" "+r.URL.Path+" "+string(b))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/status":
		_, _ = io.WriteString(w, `{"servers":[{"name":"secret-server","connection":{"state":"ready"}}]}`)
	case "/v1/writes":
		_, _ = io.WriteString(w, `[]`)
	default:
		_, _ = io.WriteString(w, `{}`)
	}
}

func (f *fakeAPI) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func serve(u *UI, method, target, cookie string, form url.Values) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
	}
	w := httptest.NewRecorder()
	u.ServeHTTP(w, r)
	return w
}

// login spends a fresh code and answers the session cookie.
func login(t *testing.T, u *UI) *http.Cookie {
	t.Helper()
	return loginOn(t, u, u)
}

// loginOn spends a code minted by one UI on another.
func loginOn(t *testing.T, minted, on *UI) *http.Cookie {
	t.Helper()
	code, err := minted.NewCode()
	if err != nil {
		t.Fatal(err)
	}
	w := serve(on, "GET", "/ui/login?code="+code, "", nil)
	cs := w.Result().Cookies()
	if w.Code != http.StatusOK || len(cs) != 1 {
		t.Fatalf("login: %d, cookies %v", w.Code, cs)
	}
	return cs[0]
}

func TestLoginCodeWorksOnce(t *testing.T) {
	api := &fakeAPI{}
	u := newUI(t, api)
	code, _ := u.NewCode()
	w := serve(u, "GET", "/ui/login?code="+code, "", nil)
	c := w.Result().Cookies()
	if w.Code != http.StatusOK || len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/ui/" {
		t.Fatalf("first use: %d, cookies %+v", w.Code, c)
	}
	w = serve(u, "GET", "/ui/login?code="+code, "", nil)
	if w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) != 0 || !strings.Contains(w.Body.String(), "used already") {
		t.Fatalf("second use: %d %v %s", w.Code, w.Result().Cookies(), w.Body)
	}
	w = serve(u, "GET", "/ui/", c[0].Value, nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "secret-server") {
		t.Fatalf("overview with the session: %d %s", w.Code, w.Body)
	}
	if got := api.requests(); len(got) == 0 || !strings.HasPrefix(got[0], "GET /v1/status ") {
		t.Fatalf("the page asked the API: %q", got)
	}
}

// Without a session: the login page on every page, no API call, no POST.
func TestStrangerSeesNothing(t *testing.T) {
	api := &fakeAPI{}
	u := newUI(t, api)
	login(t, u) // someone else's session exists
	for _, p := range []string{"/ui/", "/ui/servers/s", "/ui/servers/s/tools/t", "/ui/writes", "/ui/writes/s/clear", "/ui/activity", "/ui/sessions", "/ui/events"} {
		for _, cookie := range []string{"", "forged"} {
			w := serve(u, "GET", p, cookie, nil)
			if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "secret-server") || !strings.Contains(w.Body.String(), "warden ui") {
				t.Fatalf("GET %s (cookie %q): %d %s", p, cookie, w.Code, w.Body)
			}
		}
	}
	if w := serve(u, "POST", "/ui/servers/s/block", "", url.Values{"tool": {"t"}}); w.Code != http.StatusForbidden {
		t.Fatalf("POST without a session: %d", w.Code)
	}
	if got := api.requests(); len(got) != 0 {
		t.Fatalf("a stranger's requests reached the API: %q", got)
	}
}

// A form's POST needs the CSRF token of its own session, and sends the
// hashes the page showed.
func TestFormsNeedTheSessionsCSRFToken(t *testing.T) {
	api := &fakeAPI{}
	u := newUI(t, api)
	mine, other := login(t, u), login(t, u)
	form := url.Values{"tool": {"t"}, "hash.t": {"sha256:aa"}}
	for _, csrf := range []string{"", "wrong", csrfOf(t, u, other)} {
		form.Set("csrf", csrf)
		if w := serve(u, "POST", "/ui/servers/s/approve", mine.Value, form); w.Code != http.StatusForbidden {
			t.Fatalf("POST with csrf %q: %d", csrf, w.Code)
		}
	}
	if got := api.requests(); len(got) != 0 {
		t.Fatalf("refused forms reached the API: %q", got)
	}
	form.Set("csrf", csrfOf(t, u, mine))
	if w := serve(u, "POST", "/ui/servers/s/approve", mine.Value, form); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/ui/servers/s" {
		t.Fatalf("POST with the session's token: %d %s", w.Code, w.Header().Get("Location"))
	}
	got := api.requests()
	if len(got) != 1 || !strings.HasPrefix(got[0], "POST /v1/servers/s/tools/approve ") {
		t.Fatalf("API requests: %q", got)
	}
	var req approval.ToolApproval
	if err := json.Unmarshal([]byte(strings.SplitN(got[0], " ", 3)[2]), &req); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(req.Tools, []string{"t"}) || req.ExpectedHashes["t"] != "sha256:aa" {
		t.Fatalf("approval sent: %+v", req)
	}
}

func TestDiffLines(t *testing.T) {
	rows := diffLines([]string{"a", "b", "c"}, []string{"a", "B", "c", "d"})
	want := []diffRow{
		{Left: "a", Right: "a"},
		{Left: "b", Right: "B", Old: true, New: true},
		{Left: "c", Right: "c"},
		{Right: "d", New: true, NoLeft: true},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("rows:\n%+v\nwant\n%+v", rows, want)
	}
	fs := compareTool([]byte(`{"name":"t","description":"old"}`), []byte(`{"name":"t","description":"new","annotations":{"readOnlyHint":true}}`))
	if len(fs) != 2 || fs[0].Name != "description" || !fs[0].Changed || fs[1].Name != "annotations" || !fs[1].Changed {
		t.Fatalf("fields: %+v", fs)
	}
}

func TestExpiredCodeAndLogout(t *testing.T) {
	u := newUI(t, &fakeAPI{})
	code, _ := u.NewCode()
	expire(t, u, code)
	if w := serve(u, "GET", "/ui/login?code="+code, "", nil); w.Code != http.StatusUnauthorized || len(w.Result().Cookies()) != 0 {
		t.Fatalf("an expired code: %d %v", w.Code, w.Result().Cookies())
	}
	c := login(t, u)
	w := serve(u, "POST", "/ui/logout", c.Value, url.Values{"csrf": {csrfOf(t, u, c)}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("logout: %d", w.Code)
	}
	if w := serve(u, "GET", "/ui/", c.Value, nil); w.Code != http.StatusUnauthorized {
		t.Fatalf("the page after logout: %d", w.Code)
	}
}

// A tool's findings are shown on its page, the words marked and escaped
// (the field a server named, and its words, with no bidi or invisible
// character shown raw), and counted in its server's list.
func TestFindingsShown(t *testing.T) {
	tool := `{"name":"notes","class":"write","status":"changed","present":true,"current_hash":"sha256:b","approved_hash":"sha256:a",
		"current":{"name":"notes","description":"Adds a note."},"approved":{"name":"notes","description":"Adds."},
		"findings":[{"rule":"credential-access","severity":"high","field":"description","excerpt":"read ~/.ssh/id_rsa <b>now</b>"},
		{"rule":"invisible-characters","severity":"medium","field":"inputSchema.properties.\u202eeman.description","excerpt":"safe\u200bread"}],
		"reason":"high-severity finding (credential-access) <i>x</i>"}`
	clean := `{"name":"list","class":"read","status":"pending","present":true,"current_hash":"sha256:c","findings":[]}`
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/servers/fx", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"name":"fx"}`) })
	m.HandleFunc("GET /v1/servers/fx/tools", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "["+clean+","+tool+"]") })
	m.Handle("GET /", &fakeAPI{})
	u := newUI(t, m)
	c := login(t, u)
	page := serve(u, "GET", "/ui/servers/fx/tools/notes", c.Value, nil)
	if body := page.Body.String(); page.Code != http.StatusOK || !strings.Contains(body, `<section id="findings">`) ||
		!strings.Contains(body, `<span class="tag bad">high</span> credential-access in description: <mark>read ~/.ssh/id_rsa &lt;b&gt;now&lt;/b&gt;</mark>`) ||
		!strings.Contains(body, `<p class="flash bad" id="held-reason">Held: high-severity finding (credential-access) &lt;i&gt;x&lt;/i&gt;.`) ||
		!strings.Contains(body, `invisible-characters in inputSchema.properties.\u202eeman.description: <mark>safe\u200bread</mark>`) ||
		strings.ContainsAny(body, "\u202e\u200b") {
		t.Errorf("the tool page: %d\n%s", page.Code, body)
	}
	// The list counts the findings, shows why the tool is held, puts it
	// first, and leaves it out of approving all.
	list := serve(u, "GET", "/ui/servers/fx", c.Value, nil)
	body := list.Body.String()
	for _, want := range []string{`<span class="tag bad findings">2 finding(s)</span>`, `<div class="small flagged-why">Held: high-severity finding (credential-access) &lt;i&gt;x&lt;/i&gt;.`,
		`Approve all 1 pending and changed, as shown`, `<span class="small" id="flagged-note">1 tool(s) with a high-severity finding stay pending`} {
		if !strings.Contains(body, want) {
			t.Errorf("the server page lacks %q: %d\n%s", want, list.Code, body)
		}
	}
	if strings.Contains(body, `name="shown" value="notes"`) || strings.Index(body, `data-tool="notes"`) > strings.Index(body, `data-tool="list"`) {
		t.Errorf("the server page: notes must come first and not be approved by all:\n%s", body)
	}
}
