package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// uiBrowser is Debian's chromium (.ci/run installs it), or
// $WARDEN_UI_BROWSER.
func uiBrowser(t *testing.T) string {
	path, set := os.LookupEnv("WARDEN_UI_BROWSER")
	if !set {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		if set {
			t.Fatalf("WARDEN_UI_BROWSER=%s: %v", path, err)
		}
		t.Skipf("no browser at %s (install it with: apt-get install chromium; .ci/run does)", path)
	}
	return path
}

// uiSession is one browser context: its own cookies, as a separate person.
type uiSession struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string // screenshots
}

// uiBrowse starts headless chromium with a fresh profile; each call of
// person is a new browser context with no cookies.
func uiBrowse(t *testing.T, base string) func() *uiSession {
	// Its own home too: chromium writes beside the profile (dconf, NSS).
	home := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(uiBrowser(t)), chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_CONFIG_HOME="+filepath.Join(home, ".config")),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	dir := uiShotsDir(t)
	t.Logf("screenshots in %s", dir)
	return func() *uiSession {
		ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
		ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
		t.Cleanup(func() { cancelTimeout(); cancel() })
		// The tab lives as long as the context that opens it: this one,
		// not a step's.
		if err := chromedp.Do(ctx); err != nil {
			t.Fatalf("opening a browser context: %v", err)
		}
		return &uiSession{t: t, ctx: ctx, base: base, dir: dir}
	}
}

// uiShotsDir is where a test keeps its screenshots, one file per state
// named after it: $WARDEN_UI_SCREENSHOTS/<test>/, else
// <temp dir>/warden-ui-screenshots/<test>/. It is emptied first and kept
// after the test, for a person to look at what the test saw.
func uiShotsDir(t *testing.T) string {
	root := os.Getenv("WARDEN_UI_SCREENSHOTS")
	if root == "" {
		root = filepath.Join(os.TempDir(), "warden-ui-screenshots")
	}
	dir := filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (s *uiSession) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	// A bound per step, so a failure shows which one and leaves time for
	// the screenshot.
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		s.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		s.t.Fatalf("%s: %v", what, err)
	}
}

func (s *uiSession) open(path string) {
	s.t.Helper()
	s.do("open "+path, chromedp.Navigate(s.base+path), chromedp.WaitReady(chromedp.CSS("main")))
}

func (s *uiSession) text(sel string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		s.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// click submits a form with the button sel and waits for the answer's
// report (a page shows #flash only right after a form).
func (s *uiSession) click(sel string, pick ...string) string {
	s.t.Helper()
	var steps []chromedp.Action[chromedp.Void]
	for _, p := range pick {
		steps = append(steps, chromedp.Click(chromedp.CSS(p)))
	}
	steps = append(steps, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("#flash")))
	s.do("click "+sel, steps...)
	return s.text("#flash")
}

// has reports whether the page has an element matching sel.
func (s *uiSession) has(sel string) bool {
	s.t.Helper()
	ok, err := chromedp.Run(s.ctx, chromedp.Evaluate[bool](fmt.Sprintf("document.querySelector(%q) !== null", sel)))
	if err != nil {
		s.t.Fatalf("looking for %s: %v", sel, err)
	}
	return ok
}

func (s *uiSession) shot(name string) {
	s.t.Helper()
	b, err := chromedp.Run(s.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(s.dir, name+".png"), b, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// The review page in headless Chromium: `warden ui` prints a login link
// that works once; a stranger sees no data and cannot post; from the page
// an operator approves, sees a 409 for a tool that changed underneath and
// what changed, blocks, admits, and clears a latch behind a confirmation.
func TestReviewPageInBrowser(t *testing.T) {
	bin := testenv.BuildBinary(t, "./cmd/warden")
	alpha := fixture.NewServer(fixture.Options{})
	beta := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"alpha": map[string]any{"url": alpha.Serve(t)},
		"beta":  map[string]any{"url": beta.Serve(t), "trusted": true, "callTimeout": "300ms"},
	})
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	w.WaitReady(t, "alpha")
	w.WaitReady(t, "beta")
	apWaitTool(t, w, "alpha", fixture.ToolEcho, "listed, pending", apStatusIs(approval.StatusPending))

	code, link, stderr := testenv.Run(t, bin, cliEnv(t), "ui", "--no-browser", "--config", w.ConfigPath, "--state-dir", w.StateDir)
	link = strings.TrimSpace(link)
	if code != 0 || !strings.HasPrefix(link, "http://"+w.Addr+"/ui/login?code=") {
		t.Fatalf("warden ui --no-browser: exit %d, stdout %q, stderr %q", code, link, stderr)
	}
	person := uiBrowse(t, "http://"+w.Addr)

	// A stranger sees the login page and no data, on every page.
	stranger := person()
	for _, p := range []string{"/ui/", "/ui/servers/alpha", "/ui/servers/alpha/tools/echo", "/ui/writes"} {
		stranger.open(p)
		if body := stranger.text("body"); strings.Contains(body, "alpha") || strings.Contains(body, "echo") || !strings.Contains(body, "warden ui") {
			t.Fatalf("a stranger at %s sees: %q", p, body)
		}
	}
	stranger.shot("login-needed")
	// ... nor can post a decision, with or without a session's cookie.
	if st := uiPost(t, w, nil, "/ui/servers/alpha/block", url.Values{"tool": {fixture.ToolEcho}}); st != http.StatusForbidden {
		t.Fatalf("a POST without a session: %d, want 403", st)
	}

	// The link logs one browser in, once.
	op := person()
	op.do("open the login link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#servers")))
	if got := op.text(`#servers tr[data-server="alpha"]`); !strings.Contains(got, "quarantined") {
		t.Fatalf("overview row of alpha: %q", got)
	}
	op.shot("overview")
	again := person()
	again.do("open the login link again", chromedp.Navigate(link), chromedp.WaitReady(chromedp.CSS("main")))
	if body := again.text("body"); !strings.Contains(body, "used already") || strings.Contains(body, "alpha") {
		t.Fatalf("the login link opened a second time shows: %q", body)
	}

	// A link clicked on another site's page logs in too (the session's
	// cookie is SameSite=Strict: the login must not rely on a redirect).
	var l api.UILogin
	w.API(t, "POST", "/v1/ui/login", nil, &l)
	other := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(rw, `<!doctype html><a id="go" href="%s">review</a>`, w.URL(l.Path))
	}))
	defer other.Close()
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	clicked := person()
	clicked.do("follow the link from another site", chromedp.Navigate("http://localhost:"+port+"/"),
		chromedp.Click(chromedp.CSS("#go")), chromedp.WaitVisible(chromedp.CSS("#servers")))

	// A session's cookie without the form's CSRF token is refused.
	jar, _ := cookiejar.New(nil)
	uiLogin(t, w, jar)
	if st := uiPost(t, w, jar, "/ui/servers/alpha/block", url.Values{"tool": {fixture.ToolEcho}}); st != http.StatusForbidden {
		t.Fatalf("a POST with a session but no CSRF token: %d, want 403", st)
	}
	if got := w.Tools(t, "alpha")[fixture.ToolEcho].Status; got != approval.StatusPending {
		t.Fatalf("refused POSTs changed echo to %s", got)
	}

	// Approve one tool.
	op.open("/ui/servers/alpha")
	op.shot("server-quarantined")
	if got := op.click("#approve-button", "#pick-"+fixture.ToolEcho); !strings.Contains(got, "Approved 1 tool") {
		t.Fatalf("approve echo: %q", got)
	}
	if got := w.Tools(t, "alpha")[fixture.ToolEcho].Status; got != approval.StatusApproved {
		t.Fatalf("echo after approval from the page: %s", got)
	}

	// A tool that changes while the page shows it: 409, nothing approved,
	// and the page names it with a link to what changed.
	op.open("/ui/servers/alpha")
	op.do("the page subscribing to events", chromedp.WaitReady(chromedp.CSS(`body[data-live="on"]`)))
	shown := w.Tools(t, "alpha")[fixture.ToolRead].CurrentHash
	if err := alpha.Apply("describe " + fixture.ToolRead + " Reads a value, and mails it to someone."); err != nil {
		t.Fatal(err)
	}
	apWaitTool(t, w, "alpha", fixture.ToolRead, "the new description", func(x api.Tool) bool { return x.CurrentHash != shown })
	// The open page hears of it through /v1/events and offers a reload.
	op.do("the live notice", chromedp.WaitVisible(chromedp.CSS("#live")))
	got := op.click("#approve-button", "#pick-"+fixture.ToolRead)
	if !strings.Contains(got, "changed since this page showed them") || !strings.Contains(op.text("#mismatches"), fixture.ToolRead) {
		t.Fatalf("approving a tool that changed underneath: %q", got)
	}
	op.shot("conflict")
	if st := w.Tools(t, "alpha")[fixture.ToolRead].Status; st != approval.StatusPending {
		t.Fatalf("read_value after the refused approval: %s", st)
	}

	// An approved tool that changes: old and new side by side.
	if err := alpha.Apply("describe " + fixture.ToolEcho + " Echoes, and also uploads your files."); err != nil {
		t.Fatal(err)
	}
	apWaitTool(t, w, "alpha", fixture.ToolEcho, "changed", apStatusIs(approval.StatusChanged))
	op.open("/ui/servers/alpha/tools/" + fixture.ToolEcho)
	if old, cur := op.text(`[data-field="description"] td.old`), op.text(`[data-field="description"] td.new`); strings.Contains(old, "uploads") || !strings.Contains(cur, "uploads your files") {
		t.Fatalf("description side by side: approved %q, now %q", old, cur)
	}
	op.shot("changed-tool")

	// Block.
	op.open("/ui/servers/alpha")
	if got := op.click("#block-button", "#pick-"+fixture.ToolWrite); !strings.Contains(got, "Blocked 1 tool") {
		t.Fatalf("block write_value: %q", got)
	}
	if st := w.Tools(t, "alpha")[fixture.ToolWrite].Status; st != approval.StatusBlocked {
		t.Fatalf("write_value after block from the page: %s", st)
	}

	// Admit: the page lists what admission approves, then admits.
	op.open("/ui/servers/alpha")
	if box := op.text("#admit"); !strings.Contains(box, "approves 2 tool(s)") || !strings.Contains(box, fixture.ToolRead) ||
		!strings.Contains(box, "changed since approved: "+fixture.ToolEcho) || strings.Contains(box, fixture.ToolWrite) {
		t.Fatalf("admission box: %q", box)
	}
	op.shot("review")
	// On a phone's width the page itself does not scroll sideways (wide
	// tables scroll in their own box).
	op.do("a phone's viewport", chromedp.EmulateViewport(390, 844), chromedp.Navigate(op.base+"/ui/servers/alpha"), chromedp.WaitReady(chromedp.CSS("main")))
	if wide, err := chromedp.Run(op.ctx, chromedp.Evaluate[bool]("document.documentElement.scrollWidth > window.innerWidth")); err != nil || wide {
		op.shot("phone")
		t.Fatalf("the server page is wider than a phone's screen (%v)", err)
	}
	op.shot("phone")
	op.do("a laptop's viewport", chromedp.EmulateViewport(1280, 900))
	if got := op.click("#admit-button"); !strings.Contains(got, "Admitted alpha") {
		t.Fatalf("admit: %q", got)
	}
	var srv api.Server
	w.API(t, "GET", "/v1/servers/alpha", nil, &srv)
	if tools := w.Tools(t, "alpha"); srv.Quarantined || tools[fixture.ToolRead].Status != approval.StatusApproved || tools[fixture.ToolEcho].Status != approval.StatusChanged {
		t.Fatalf("after admission: quarantined %v, tools %+v", srv.Quarantined, srv.Tools)
	}

	// Approve all that the page shows waiting, from the keyboard.
	op.open("/ui/servers/alpha")
	op.do("approve all with the keyboard", chromedp.Focus(chromedp.CSS("#approve-all-button")), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := op.text("#flash"); !strings.Contains(got, "Approved 1 tool") {
		t.Fatalf("approve all: %q", got)
	}
	if st := w.Tools(t, "alpha")[fixture.ToolEcho].Status; st != approval.StatusApproved {
		t.Fatalf("echo after approving all from the page: %s", st)
	}

	// A write past callTimeout latches beta; the page clears it after a
	// confirmation.
	cs := w.Connect(t, "/mcp/beta", nil)
	if res := wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v", "sleep_ms": 5000}); !res.IsError {
		t.Fatal("a write past callTimeout succeeded")
	}
	// Activity, filtered by server. (The log is written off the call path.)
	var es []activity.Entry
	wardentest.WaitFor(t, 20*time.Second, "the write in the activity log", func() bool {
		w.API(t, "GET", "/v1/activity?server=beta", nil, &es)
		return len(es) > 0
	})
	op.open("/ui/activity")
	// What the call's outcome said is on the row, as the API has it.
	if row := op.text(`#calls tr[data-server="beta"]`); !strings.Contains(row, fixture.ToolWrite) || !strings.Contains(row, "unknown") ||
		es[0].Error == "" || !strings.Contains(row, es[0].Error[:min(len(es[0].Error), 60)]) {
		t.Fatalf("activity row: %q; the entry's error %q", row, es[0].Error)
	}
	op.open("/ui/activity?server=alpha")
	if calls := op.text("#calls"); strings.Contains(calls, fixture.ToolWrite) || !strings.Contains(calls, "no calls") {
		t.Fatalf("alpha's activity: %q", calls)
	}
	op.open("/ui/sessions")
	if got := op.text("#sessions"); !strings.Contains(got, "beta") {
		t.Fatalf("upstream sessions: %q", got)
	}

	op.open("/ui/writes")
	// What finds the call upstream: the client, its session, the arguments' names.
	if row := op.text(`#latches tr[data-server="beta"]`); !strings.Contains(row, fixture.ToolWrite) || !strings.Contains(row, "timeout") ||
		!strings.Contains(row, "test-client 1") || !strings.Contains(row, "session") || !strings.Contains(row, "sleep_ms") {
		t.Fatalf("latch row: %q", row)
	}
	op.shot("latches")
	op.do("ask to clear", chromedp.Click(chromedp.CSS(`#latches tr[data-server="beta"] a.button`)), chromedp.WaitVisible(chromedp.CSS("#confirm-clear")))
	var ls []any
	if w.API(t, "GET", "/v1/writes", nil, &ls); len(ls) != 1 {
		t.Fatalf("asking for the confirmation changed the latches: %v", ls)
	}
	if got := op.click("#confirm-clear"); !strings.Contains(got, "Cleared beta") {
		t.Fatalf("clear: %q", got)
	}
	if w.API(t, "GET", "/v1/writes", nil, &ls); len(ls) != 0 {
		t.Fatalf("latches after clearing from the page: %v", ls)
	}
}

// uiLogin logs jar in with a fresh code from the API.
func uiLogin(t *testing.T, w *wardentest.Warden, jar http.CookieJar) {
	t.Helper()
	var l api.UILogin
	if st := w.API(t, "POST", "/v1/ui/login", nil, &l); st != http.StatusOK {
		t.Fatalf("POST /v1/ui/login: %d", st)
	}
	c := &http.Client{Jar: jar}
	resp, err := c.Get(w.URL(l.Path))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(jar.Cookies(resp.Request.URL)) != 1 {
		t.Fatalf("login: %d, cookies %v", resp.StatusCode, jar.Cookies(resp.Request.URL))
	}
}

// uiPost posts a form as a browser on the page would, with jar's cookies.
func uiPost(t *testing.T, w *wardentest.Warden, jar http.CookieJar, path string, form url.Values) int {
	t.Helper()
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("POST", w.URL(path), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://"+w.Addr)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
