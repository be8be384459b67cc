package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/events"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	warden "github.com/wardenmcp/warden/internal/testing/wardentest/parts"
	"github.com/wardenmcp/warden/sessions"
	"github.com/wardenmcp/warden/writes"
)

// Strings a hostile upstream puts where the page shows them: markup, a
// terminal escape, a bidi override, a zero-width space.
const (
	evilName  = "evil<i>\u202etool"
	evilTitle = "Title\u200b<script>alert(1)</script>"
	evilDesc  = "Reads.\x1b[2J <img src=x onerror=alert(1)>\nsecond line \u202e"
)

// live is the page over the real REST API, the real stores and a gateway
// with two fixture upstreams: q (untrusted, so quarantined with its tools
// pending) and fx (trusted, with a tool whose name, title and description
// are hostile).
type live struct {
	*warden.Parts
	t      *testing.T
	u      *UI
	cookie string
	csrf   string
	calls  int // made with call
}

func newLive(t *testing.T) *live {
	t.Helper()
	p := warden.New(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	q, fx := fixture.NewServer(fixture.Options{}), fixture.NewServer(fixture.Options{})
	fx.AddTool(&mcp.Tool{Name: evilName, Title: evilTitle, Description: evilDesc})
	fx.AddTool(&mcp.Tool{Name: "fancy", Title: evilTitle, Description: evilDesc})
	cfg := p.Start(t, fmt.Sprintf(`{"q": {"url": %q}, "fx": {"url": %q, "trusted": true}}`, q.Serve(t), fx.Serve(t)))
	p.WaitListed(t, "q")
	p.WaitListed(t, "fx")
	configInfo := func() api.ConfigInfo {
		info := api.ConfigInfo{Path: cfg.Path}
		for _, name := range []string{"fx", "q"} {
			info.Servers = append(info.Servers, api.ServerConfig{Name: name, Transport: cfg.Servers[name].Transport, Target: cfg.Servers[name].URL})
		}
		return info
	}
	h := api.Handler(api.Deps{Version: "test", Token: "tok", Started: time.Now(), Gateway: p.Gateway,
		Approvals: p.Approvals, Writes: p.Writes, Activity: p.Activity, Events: p.Events, Auth: p.Auth,
		Config: configInfo, Sessions: func() any { return p.Sessions.List() }})
	e := &live{Parts: p, t: t, u: &UI{API: h, Store: p.Store}}
	c := login(t, e.u)
	e.cookie, e.csrf = c.Value, csrfOf(t, e.u, c)
	return e
}

// get serves a page to the session and answers its status and body.
func (e *live) get(path string) (int, string) {
	e.t.Helper()
	w := serve(e.u, "GET", path, e.cookie, nil)
	return w.Code, w.Body.String()
}

// post sends a form with the session's CSRF token and answers where it
// redirects; anything but a redirect fails the test.
func (e *live) post(path string, form url.Values) string {
	e.t.Helper()
	form.Set("csrf", e.csrf)
	w := serve(e.u, "POST", path, e.cookie, form)
	if w.Code != http.StatusSeeOther {
		e.t.Fatalf("POST %s %v: %d %s", path, form, w.Code, w.Body)
	}
	return w.Header().Get("Location")
}

// flash is the message the page after a POST shows.
func (e *live) flash(path string) string {
	e.t.Helper()
	_, body := e.get(path)
	m := regexp.MustCompile(`(?s)<div id="flash" class="flash (ok|bad)" role="alert">\s*<p>(.*?)</p>`).FindStringSubmatch(body)
	if m == nil {
		e.t.Fatalf("GET %s shows no flash: %s", path, body)
	}
	return m[1] + ": " + m[2]
}

// tools answers a server's tools as the API reports them, by name.
func (e *live) tools(server string) map[string]api.Tool {
	e.t.Helper()
	var ts []api.Tool
	e.api("GET", serverPath(server, "/tools"), &ts)
	m := map[string]api.Tool{}
	for _, t := range ts {
		m[t.Name] = t
	}
	return m
}

// do sends a request to the REST API with the operator token.
func (e *live) do(method, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer tok")
	w := httptest.NewRecorder()
	e.u.API.ServeHTTP(w, r)
	return w
}

// api calls the REST API as the page does and decodes its answer.
func (e *live) api(method, path string, out any) {
	e.t.Helper()
	w := e.do(method, path, "")
	if w.Code != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
}

// call calls tool on server through the API, and waits until the
// activity page shows as many calls as have been made: the log has each,
// run or refused.
func (e *live) call(server, tool string) {
	e.t.Helper()
	e.do("POST", serverPath(server, "/call"), fmt.Sprintf(`{"tool": %q}`, tool))
	e.calls++
	warden.WaitFor(e.t, 10*time.Second, fmt.Sprintf("%d call(s) logged", e.calls), func() bool {
		_, body := e.get("/ui/activity")
		return strings.Count(body, "<tr data-server=") == e.calls
	})
}

// state is a server's approvals, to show that a refused form changed nothing.
func (e *live) state(server string) string {
	e.t.Helper()
	st, _ := e.Approvals.Server(server)
	b, err := json.Marshal(struct {
		Q     bool
		Tools []approval.ToolRecord
	}{st.Quarantined, e.Approvals.Tools(server)})
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

func (e *live) quarantined(server string) bool {
	var s api.Server
	e.api("GET", serverPath(server, ""), &s)
	return s.Quarantined
}

// hashes are form fields naming tools and the hashes the page showed.
func hashes(field string, tools map[string]api.Tool, names ...string) url.Values {
	v := url.Values{}
	for _, n := range names {
		v.Add(field, n)
		v.Set("hash."+n, tools[n].CurrentHash)
	}
	return v
}

// Admit, block, approve and quarantine through the page change what the
// API reports, and the page after each says what happened.
func TestDecisionsChangeState(t *testing.T) {
	e := newLive(t)
	code, body := e.get("/ui/servers/q")
	if code != http.StatusOK || !e.quarantined("q") || !strings.Contains(body, `id="admit-button"`) {
		t.Fatalf("q's page: %d, quarantined %v: %s", code, e.quarantined("q"), body)
	}
	tools := e.tools("q")
	shown := hashes("shown", tools, fixture.ToolRead, fixture.ToolWrite, fixture.ToolDelete, fixture.ToolEcho)
	if to := e.post("/ui/servers/q/admit", shown); to != "/ui/servers/q" {
		t.Fatalf("admit returns to %q", to)
	}
	if f := e.flash("/ui/servers/q"); e.quarantined("q") || f != "ok: Admitted q, approving 4 tool(s); 0 still pending, 0 still changed." {
		t.Fatalf("after admit: quarantined %v, flash %q", e.quarantined("q"), f)
	}
	if to := e.post("/ui/servers/q/block", url.Values{"tool": {fixture.ToolEcho}, "from": {"tool"}}); to != "/ui/servers/q/tools/echo" {
		t.Fatalf("block returns to %q", to)
	}
	if st := e.tools("q")[fixture.ToolEcho].Status; st != approval.StatusBlocked {
		t.Fatalf("echo after block: %s", st)
	}
	if f := e.flash("/ui/servers/q/tools/echo"); f != "ok: Blocked 1 tool(s): they are neither listed nor run." {
		t.Fatalf("flash after block: %q", f)
	}
	e.post("/ui/servers/q/approve", hashes("tool", e.tools("q"), fixture.ToolEcho))
	if st := e.tools("q")[fixture.ToolEcho].Status; st != approval.StatusApproved {
		t.Fatalf("echo after approve: %s", st)
	}
	if f := e.flash("/ui/servers/q"); !strings.HasPrefix(f, "ok: Approved 1 tool(s); 0 still pending") {
		t.Fatalf("flash after approve: %q", f)
	}
	e.post("/ui/servers/q/quarantine", url.Values{})
	if f := e.flash("/ui/servers/q"); !e.quarantined("q") || !strings.HasPrefix(f, "ok: Quarantined q: none of its tools") {
		t.Fatalf("after quarantine: quarantined %v, flash %q", e.quarantined("q"), f)
	}
}

// A decision the API refuses changes nothing, and the page says why: a
// tool that changed since the page showed it is listed, with its link.
func TestRefusedDecisionsChangeNothing(t *testing.T) {
	e := newLive(t)
	before := e.state("q")
	stale := url.Values{"tool": {fixture.ToolRead}, "hash." + fixture.ToolRead: {"sha256:00"}}
	for _, tc := range []struct {
		path  string
		form  url.Values
		flash string
	}{
		{"/ui/servers/q/approve", stale, "bad: Nothing was changed: 1 tool(s) changed since this page showed them."},
		{"/ui/servers/q/approve", url.Values{"all": {"1"}, "shown": {fixture.ToolRead}, "hash." + fixture.ToolRead: {"sha256:00"}}, "bad: Nothing was changed: 1 tool(s) changed"},
		{"/ui/servers/q/admit", url.Values{"shown": {fixture.ToolRead}, "hash." + fixture.ToolRead: {"sha256:00"}}, "bad: Nothing was changed: 1 tool(s) changed"},
		{"/ui/servers/q/approve", url.Values{}, "bad: no tool selected: tick the tools to approve"},
		{"/ui/servers/q/block", url.Values{}, "bad: no tool selected: tick the tools to block"},
		{"/ui/servers/q/block", url.Values{"tool": {"nosuch"}}, `bad: server &#34;q&#34; has no tool &#34;nosuch&#34;; nothing was changed`},
	} {
		e.post(tc.path, tc.form)
		if f := e.flash("/ui/servers/q"); !strings.HasPrefix(f, tc.flash) {
			t.Errorf("POST %s %v: flash %q, want %q…", tc.path, tc.form, f, tc.flash)
		}
		if after := e.state("q"); after != before {
			t.Fatalf("POST %s %v was refused, but q's approvals changed:\n%s\n%s", tc.path, tc.form, before, after)
		}
	}
	e.post("/ui/servers/q/approve", stale)
	_, body := e.get("/ui/servers/q")
	if !strings.Contains(body, `<ul id="mismatches"><li><a href="/ui/servers/q/tools/read_value">read_value</a>:`) || !strings.Contains(body, "was 00 on the page, is ") {
		t.Errorf("the page after a stale approval lists no mismatch: %s", body)
	}
}

// Every form refuses a POST without the session's CSRF token, and then
// nothing has changed.
func TestFormsWithoutTokenChangeNothing(t *testing.T) {
	e := newLive(t)
	tools := e.tools("q")
	if err := e.Writes.Record(writes.Latch{Server: "q", Tool: fixture.ToolWrite, Reason: writes.ReasonTimeout}, nil); err != nil {
		t.Fatal(err)
	}
	before := e.state("q")
	for _, path := range []string{"/ui/servers/q/admit", "/ui/servers/q/approve", "/ui/servers/q/block", "/ui/servers/q/quarantine", "/ui/writes/q/clear", "/ui/logout"} {
		for _, csrf := range []string{"", "wrong", e.csrf + "x"} {
			form := hashes("shown", tools, fixture.ToolRead)
			form.Set("tool", fixture.ToolRead)
			form.Set("all", "1")
			if csrf != "" {
				form.Set("csrf", csrf)
			}
			w := serve(e.u, "POST", path, e.cookie, form)
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "CSRF token") {
				t.Errorf("POST %s with csrf %q: %d %s", path, csrf, w.Code, w.Body)
			}
		}
	}
	if after := e.state("q"); after != before {
		t.Errorf("refused forms changed q's approvals:\n%s\n%s", before, after)
	}
	if _, latched := e.Writes.Check("q"); !latched {
		t.Error("a refused clear cleared q's latch")
	}
	if code, _ := e.get("/ui/"); code != http.StatusOK {
		t.Errorf("a refused logout ended the session: %d", code)
	}
}

// Clearing a latch takes two steps: its GET shows the latched calls and
// the button, and changes nothing; the POST clears it.
func TestClearLatchNeedsConfirmation(t *testing.T) {
	e := newLive(t)
	if err := e.Writes.Record(writes.Latch{Server: "q", Tool: fixture.ToolWrite, Reason: writes.ReasonTimeout, Surface: "mcp"}, nil); err != nil {
		t.Fatal(err)
	}
	code, body := e.get("/ui/writes")
	if code != http.StatusOK || !strings.Contains(body, `<tr data-server="q">`) || !strings.Contains(body, `href="/ui/writes/q/clear"`) {
		t.Fatalf("latched writes: %d %s", code, body)
	}
	code, body = e.get("/ui/writes/q/clear")
	if code != http.StatusOK || !strings.Contains(body, "<title>Clear q&#39;s latch? · Warden</title>") ||
		!strings.Contains(body, `<form method="post" action="/ui/writes/q/clear">`) || !strings.Contains(body, "<td>write_value</td>") {
		t.Fatalf("the confirmation: %d %s", code, body)
	}
	if _, latched := e.Writes.Check("q"); !latched {
		t.Fatal("showing the confirmation cleared the latch")
	}
	if to := e.post("/ui/writes/q/clear", url.Values{}); to != "/ui/writes" {
		t.Fatalf("clear returns to %q", to)
	}
	if _, latched := e.Writes.Check("q"); latched {
		t.Fatal("confirmed, the latch is still there")
	}
	if f := e.flash("/ui/writes"); f != "ok: Cleared q&#39;s latch: writes are allowed again." {
		t.Fatalf("flash after clear: %q", f)
	}
	if _, body := e.get("/ui/writes"); !strings.Contains(body, `id="no-latches"`) {
		t.Errorf("no latch left, the page says: %s", body)
	}
	if _, body := e.get("/ui/writes/q/clear"); !strings.Contains(body, "<p>q has no latched writes.</p>") {
		t.Errorf("the confirmation with nothing latched: %s", body)
	}
	e.post("/ui/writes/q/clear", url.Values{})
	if f := e.flash("/ui/writes"); f != "ok: q had no latched writes; nothing to clear." {
		t.Errorf("flash after clearing nothing: %q", f)
	}
	e.post("/ui/writes/nosuch/clear", url.Values{})
	if f := e.flash("/ui/writes"); !strings.HasPrefix(f, "bad: no server &#34;nosuch&#34;") {
		t.Errorf("flash after clearing an unknown server: %q", f)
	}
}

// Clearing a latch asked from the server's page returns there: the address
// is built from the path, whatever the form says.
func TestClearLatchFromServerPage(t *testing.T) {
	e := newLive(t)
	if err := e.Writes.Record(writes.Latch{Server: "q", Tool: fixture.ToolWrite, Reason: writes.ReasonTimeout, Surface: "mcp"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, body := e.get("/ui/servers/q"); !strings.Contains(body, `href="/ui/writes/q/clear?from=server"`) {
		t.Fatalf("the server's page links to clearing as:\n%s", body)
	}
	_, body := e.get("/ui/writes/q/clear?from=server")
	if !strings.Contains(body, `<input type="hidden" name="from" value="server">`) || !strings.Contains(body, `<a href="/ui/servers/q">Cancel</a>`) {
		t.Fatalf("the confirmation from the server's page:\n%s", body)
	}
	if to := e.post("/ui/writes/q/clear", url.Values{"from": {"server"}}); to != "/ui/servers/q" {
		t.Fatalf("clear from the server's page returns to %q", to)
	}
	if f := e.flash("/ui/servers/q"); f != "ok: Cleared q&#39;s latch: writes are allowed again." {
		t.Errorf("flash on the server's page: %q", f)
	}
	if to := e.post("/ui/writes/q/clear", url.Values{"from": {"https://evil.test/"}}); to != "/ui/writes" {
		t.Errorf("a from the page never gives returns to %q", to)
	}
}

// The activity page lists the calls the API logged, filtered by server
// and limit as the form asks.
func TestActivityPage(t *testing.T) {
	e := newLive(t)
	for _, server := range []string{"fx", "fx", "q"} {
		e.call(server, fixture.ToolEcho)
	}
	for _, tc := range []struct {
		query   string
		servers []string
	}{
		{"", []string{"q", "fx", "fx"}},
		{"?server=fx", []string{"fx", "fx"}},
		{"?server=fx&limit=1", []string{"fx"}},
		{"?limit=nonsense", []string{"q", "fx", "fx"}},
	} {
		code, body := e.get("/ui/activity" + tc.query)
		var got []string
		for _, m := range regexp.MustCompile(`<tr data-server="([^"]*)">`).FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		if code != http.StatusOK || strings.Join(got, ",") != strings.Join(tc.servers, ",") {
			t.Errorf("activity%s: %d, rows %v, want %v", tc.query, code, got, tc.servers)
		}
	}
	_, body := e.get("/ui/activity?server=fx&limit=7")
	if !strings.Contains(body, "<option selected>fx</option>") || !strings.Contains(body, "<option>q</option>") || !strings.Contains(body, `value="7"`) {
		t.Errorf("the filter form does not show the filter: %s", body)
	}
	// A caller's calls (activity records who called, see package callers).
	e.Activity.Add(activity.Entry{At: time.Now(), Server: "fx", Tool: fixture.ToolEcho, Outcome: "ok", User: "ci-<bot>"})
	e.Activity.Flush()
	code, body := e.get("/ui/activity?user=ci-%3Cbot%3E")
	if rows := strings.Count(body, "<tr data-server="); code != http.StatusOK || rows != 1 || !strings.Contains(body, "<td>ci-&lt;bot&gt;</td>") ||
		!strings.Contains(body, `name="user" value="ci-&lt;bot&gt;"`) {
		t.Errorf("activity of one caller: %d, %d rows: %s", code, rows, body)
	}
	if code, body := e.get("/ui/activity?server=nosuch"); code != http.StatusNotFound || !strings.Contains(body, `<p class="flash bad" id="problem">no server &#34;nosuch&#34;`) {
		t.Errorf("activity of an unknown server: %d %s", code, body)
	}
	_, body = e.get("/ui/activity?server=q")
	// The refusal, and what it said.
	if !regexp.MustCompile(`<td class="bad">refused \(SERVER_QUARANTINED\)<div class="error detail">[^<]*quarantined[^<]*</div></td>`).MatchString(body) {
		t.Errorf("the call to quarantined q shows no refusal: %s", body)
	}
}

// The sessions page lists the upstream sessions the store holds.
func TestSessionsPage(t *testing.T) {
	e := newLive(t)
	if err := e.Sessions.Save(sessions.Record{Server: "fx", SessionID: "abcdefgh-rest", ProtocolVersion: "2025-11-25", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}, "fresh"); err != nil {
		t.Fatal(err)
	}
	code, body := e.get("/ui/sessions")
	if code != http.StatusOK || !strings.Contains(body, "<tr><td>fx</td><td><code>abcdefgh…</code></td><td>2025-11-25</td><td>2026-01-02 03:04:05 UTC</td><td>fresh</td></tr>") || strings.Contains(body, "rest") {
		t.Fatalf("sessions: %d %s", code, body)
	}
}

// An unknown server or tool is a 404 page that names what was not found;
// an unknown page is a 404 that says where to start.
func TestNotFoundPages(t *testing.T) {
	e := newLive(t)
	for _, tc := range []struct{ path, says string }{
		{"/ui/servers/nosuch", `no server &#34;nosuch&#34;`},
		{"/ui/servers/q/tools/nosuch", `server &#34;q&#34; has no tool &#34;nosuch&#34;`},
		{"/ui/servers/nosuch/tools/echo", `no server &#34;nosuch&#34;`},
		{"/ui/nosuch", "no such page; start at /ui/"},
	} {
		code, body := e.get(tc.path)
		if code != http.StatusNotFound || !strings.Contains(body, tc.says) {
			t.Errorf("GET %s: %d %s; want 404 saying %q", tc.path, code, body, tc.says)
		}
	}
}

// visible is the text of a page as a browser shows it: the markup (with
// its attributes) taken out, entities left as they are.
func visible(body string) string { return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(body, "") }

// What an upstream says is shown escaped on every page that shows it: no
// markup of its own, no control or invisible characters in the text.
func TestServerStringsAreEscaped(t *testing.T) {
	e := newLive(t)
	if err := e.Writes.Record(writes.Latch{Server: "fx", Tool: evilName, Reason: writes.ReasonTimeout, Surface: "mcp",
		Client: writes.Caller{Name: "agent\x1b[2J", Version: "1\u200b"}, Args: []writes.Arg{{Name: "key\u202e", Bytes: 5, Value: `"<b>"`}}}, nil); err != nil {
		t.Fatal(err)
	}
	e.call("fx", evilName)
	if err := e.Sessions.Save(sessions.Record{Server: "fx", SessionID: "ab\u202ecd<i>x", ProtocolVersion: "2025\x1b[2J"}, "fresh"); err != nil {
		t.Fatal(err)
	}
	// A stale decision about the hostile tool: the flash lists it.
	e.post("/ui/servers/fx/approve", url.Values{"tool": {evilName}, "hash." + evilName: {"sha256:00"}})
	evilPath := "/ui/servers/fx/tools/" + url.PathEscape(evilName)
	for _, tc := range []struct {
		path  string
		shows []string // escaped as they must be shown
	}{
		{"/ui/", []string{`evil&lt;i&gt;\u202etool`}},
		{"/ui/servers/fx", []string{`evil&lt;i&gt;\u202etool`, `Title\u200b&lt;script&gt;`, `Reads.\x1b[2J &lt;img`, `agent\x1b[2J 1\u200b`, `key\u202e`, `&#34;&lt;b&gt;&#34;`}},
		{evilPath, []string{`evil&lt;i&gt;\u202etool on fx`, `Reads.\x1b[2J &lt;img`, `Title\u200b&lt;script&gt;`}},
		{"/ui/servers/fx/tools/fancy", []string{`fancy on fx`, `Reads.\x1b[2J &lt;img`, `Title\u200b&lt;script&gt;`}},
		{"/ui/writes", []string{`evil&lt;i&gt;\u202etool`, `agent\x1b[2J`}},
		{"/ui/writes/fx/clear", []string{`evil&lt;i&gt;\u202etool`, `key\u202e`}},
		{"/ui/activity", []string{`evil&lt;i&gt;\u202etool`}},
		{"/ui/sessions", []string{`ab\u202e`, `2025\x1b[2J`}},
	} {
		code, body := e.get(tc.path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d %s", tc.path, code, body)
			continue
		}
		text := visible(body)
		if i := strings.IndexAny(text, "\x1b\u202e\u200b"); i >= 0 {
			t.Errorf("GET %s shows a raw control or invisible character: …%q…", tc.path, text[max(0, i-40):min(len(text), i+40)])
		}
		for _, tag := range []string{"<i>", "<script>", "<img", "<b>"} {
			if strings.Contains(body, tag) {
				t.Errorf("GET %s carries the upstream's markup %s", tc.path, tag)
			}
		}
		for _, s := range tc.shows {
			if !strings.Contains(text, s) {
				t.Errorf("GET %s does not show %q", tc.path, s)
			}
		}
	}
}

// The page's live updates are the API's event stream, relayed to the
// session as it comes.
func TestEventsRelayed(t *testing.T) {
	e := newLive(t)
	srv := httptest.NewServer(e.u)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/events", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: e.cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if line, err := rd.ReadString('\n'); err != nil || resp.StatusCode != http.StatusOK || line != ": warden events\n" {
		t.Fatalf("GET /ui/events: %d %q %v", resp.StatusCode, line, err)
	}
	e.Events.Publish(events.Event{Type: "writes", Server: "q"})
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before the event: %v", err)
		}
		if line == "event: writes\n" {
			return
		}
	}
}

// The overview's pending count is the tools that need a decision: those
// an operator held back are counted on their own.
func TestOverviewCountsHeldBackApart(t *testing.T) {
	e := newLive(t)
	if _, err := e.Approvals.ApproveTools("q", approval.ToolApproval{All: true, Except: []string{fixture.ToolWrite}}); err != nil {
		t.Fatal(err)
	}
	_, body := e.get("/ui/")
	row := body[strings.Index(body, `<tr data-server="q"`):]
	row = row[:strings.Index(row, "</tr>")]
	if !strings.Contains(row, `<td class="">0</td><td>1</td>`) || strings.Contains(row, "pending tool(s)") {
		t.Errorf("q, one tool pending but held back, shows:\n%s", row)
	}
}

// While the store cannot be reached, POST /v1/ui/login answers 503
// STORE_UNAVAILABLE, as the API's other decisions do (the code is kept in
// the store); once it is back, a code.
func TestUILoginStoreUnavailable(t *testing.T) {
	p := warden.New(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	u := &UI{Store: p.Store}
	h := api.Handler(api.Deps{Version: "test", Token: "tok", Started: time.Now(), Gateway: p.Gateway,
		Approvals: p.Approvals, Writes: p.Writes, Activity: p.Activity, Events: p.Events, Auth: p.Auth,
		Sessions: func() any { return p.Sessions.List() }, UILogin: u.NewCode})
	post := func() (int, api.Error) {
		r := httptest.NewRequest("POST", "/v1/ui/login", nil)
		r.Header.Set("Authorization", "Bearer tok")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var e api.Error
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		return w.Code, e
	}
	p.Store.Down(true)
	if code, e := post(); code != http.StatusServiceUnavailable || e.Error.Code != "STORE_UNAVAILABLE" || !strings.Contains(e.Error.Message, "warden status") {
		t.Fatalf("POST /v1/ui/login with the store down: %d %+v; want 503 STORE_UNAVAILABLE", code, e.Error)
	}
	p.Store.Down(false)
	if code, e := post(); code != http.StatusOK {
		t.Fatalf("POST /v1/ui/login with the store back: %d %+v", code, e.Error)
	}
}
