package e2e

// End-to-end test of operators logging in to the review page through an
// identity provider (auth.uiClient): a real OpenID provider on loopback,
// `warden serve` with "operators", and headless Chromium filling the
// provider's login form.

import (
	"net"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/idp"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A reviewer (by group) logs in at the provider, admits a quarantined
// server and approves a tool, and both records name her; she is offered
// neither quarantine nor clearing a latch, and a clear she forces anyway
// is refused for her role. An admin (by name) is offered both. A person
// "operators" does not name gets no session, and a page saying what an
// admin adds.
func TestOperatorsLogIn(t *testing.T) {
	prov := idp.Start(t)
	fx := fixture.NewServer(fixture.Options{})
	fxURL := fx.Serve(t)
	// The browser reaches Warden as localhost, the provider as 127.0.0.1:
	// two sites, so the provider's redirect back is a cross-site
	// navigation, as with a real provider.
	var public string
	w := wardentest.StartConfig(t, func(addr string) map[string]any {
		_, port, _ := net.SplitHostPort(addr)
		public = "http://localhost:" + port
		return map[string]any{
			"mcpServers": map[string]any{"fx": map[string]any{"url": fxURL}},
			"publicURL":  public,
			"auth":       map[string]any{"issuer": prov.Issuer, "audience": public + "/mcp", "uiClient": "warden-ui"},
			"operators":  []any{map[string]any{"group": "security", "role": "reviewer"}, map[string]any{"user": "ada", "role": "admin"}},
		}
	})
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	prov.AddPublicClient("warden-ui", public+"/ui/callback")
	prov.AddPerson(idp.Person{Name: "rita", Password: "rita-pw", Groups: []string{"security"}})
	prov.AddPerson(idp.Person{Name: "ada", Password: "ada-pw"})
	prov.AddPerson(idp.Person{Name: "bob", Password: "bob-pw", Groups: []string{"eng"}})
	w.WaitReady(t, "fx")
	apWaitTool(t, w, "fx", fixture.ToolEcho, "listed, pending", apStatusIs(approval.StatusPending))

	person := uiBrowse(t, public)
	// logIn starts at the review page, fills the provider's form, and
	// waits for the page it lands on to show sel.
	logIn := func(name, password, sel string) *uiSession {
		s := person()
		s.open("/ui/")
		s.do("log in as "+name, chromedp.Click(chromedp.CSS("#login-idp")), chromedp.WaitVisible(chromedp.CSS("#username")),
			chromedp.SendKeys(chromedp.CSS("#username"), name), chromedp.SendKeys(chromedp.CSS("#password"), password),
			chromedp.Click(chromedp.CSS("#submit")), chromedp.WaitVisible(chromedp.CSS(sel)))
		return s
	}

	rita := logIn("rita", "rita-pw", "#servers")
	if who := rita.text("#who"); who != "rita (reviewer)" {
		t.Fatalf("the page names %q", who)
	}
	rita.shot("reviewer-overview")
	// She approves a tool on its page, then admits the quarantined server.
	rita.open("/ui/servers/fx/tools/" + fixture.ToolEcho)
	if got := rita.click("#approve-tool"); !strings.Contains(got, "Approved 1 tool") {
		t.Fatalf("approve: %q", got)
	}
	if tl := w.Tools(t, "fx")[fixture.ToolEcho]; tl.Status != approval.StatusApproved || tl.DecidedBy != "rita" {
		t.Errorf("GET /v1/servers/fx/tools: echo %s, decided by %q", tl.Status, tl.DecidedBy)
	}
	if by := rita.text("#decided-by"); by != "rita" {
		t.Errorf("the tool's page names %q", by)
	}
	rita.open("/ui/servers/fx")
	if rita.has("#quarantine-button") {
		t.Error("a reviewer is offered quarantine")
	}
	if by := rita.text(`#tools tr[data-tool="` + fixture.ToolEcho + `"] .decided-by`); by != "by rita" {
		t.Errorf("the server's page names echo's decider: %q", by)
	}
	if got := rita.click("#admit-button"); !strings.Contains(got, "Admitted fx") {
		t.Fatalf("admit: %q", got)
	}
	if by := w.Server(t, "fx").DecidedBy; by != "rita" {
		t.Errorf("the server's decided_by: %q", by)
	}
	if by := rita.text("#server-decided-by"); !strings.Contains(by, "admitted by rita") {
		t.Errorf("the page names the server's decider: %q", by)
	}
	if rita.has("#quarantine-button") {
		t.Error("a reviewer is offered quarantine")
	}
	rita.shot("reviewer-decided")

	// Clearing a latch is not offered to her, and forced, is refused.
	rita.open("/ui/writes/fx/clear")
	if rita.has("#confirm-clear") || !rita.has("#clear-needs-admin") {
		t.Error("a reviewer is offered to clear a latch")
	}
	rita.do("force a clear", chromedp.Evaluate[chromedp.Void](`(() => {
		const f = document.createElement("form");
		f.method = "post"; f.action = "/ui/writes/fx/clear";
		const c = document.createElement("input");
		c.name = "csrf"; c.value = document.querySelector("input[name=csrf]").value;
		f.append(c); document.body.append(f); f.submit();
	})()`), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := rita.text("#flash"); !strings.Contains(got, `operator "rita" (reviewer) may not DELETE /v1/writes/fx: that needs the admin role`) {
		t.Errorf("the forced clear: %q", got)
	}
	rita.shot("reviewer-forced-clear")

	ada := logIn("ada", "ada-pw", "#servers")
	if who := ada.text("#who"); who != "ada (admin)" {
		t.Fatalf("the page names %q", who)
	}
	ada.open("/ui/servers/fx")
	if !ada.has("#quarantine-button") {
		t.Error("an admin is not offered quarantine")
	}

	bob := logIn("bob", "bob-pw", "#not-operator")
	if got := bob.text("#not-operator"); !strings.Contains(got, "bob") || !strings.Contains(bob.text("main"), `{"user": "bob", "role": "reviewer"}`) {
		t.Errorf("the refusal: %q", got)
	}
	bob.shot("not-an-operator")
	bob.open("/ui/")
	if !bob.has("#login-idp") || bob.has("#who") {
		t.Error("a person who is no operator got a session")
	}
}
