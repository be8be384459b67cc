package e2e

// End-to-end test of MCP callers with an identity provider's tokens: a
// real OpenID provider on loopback gives agents JWT access tokens, and
// `warden serve`, with "auth" naming it, shows each agent its profile.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/idp"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

func TestOIDCCallers(t *testing.T) {
	const audience = "https://warden.test/mcp"
	prov := idp.Start(t)
	prov.AddTeam(audience)
	fx := fixture.NewServer(fixture.Options{})
	w := wardentest.ServeConfig(t, "", map[string]any{
		"mcpServers": map[string]any{"fx": map[string]any{"url": fx.Serve(t), "trusted": true}},
		"publicURL":  "https://warden.test",
		"auth":       map[string]any{"issuer": prov.Issuer, "audience": audience},
		"profiles":   kcProfiles,
		"access":     []any{map[string]any{"group": "eng", "profile": "dev"}, map[string]any{"user": "reader", "profile": "readonly"}},
	})

	builder, reader := prov.Token(t, "builder"), prov.Token(t, "reader")
	dev, ro := kcConnect(t, w, builder, "/mcp", nil), kcConnect(t, w, reader, "/mcp", nil)
	wardentest.WaitFor(t, 20*time.Second, "each agent's list", func() bool {
		return slices.Equal(wardentest.SortedToolNames(t, dev), []string{"fx__echo", "fx__write_value"}) &&
			slices.Equal(wardentest.SortedToolNames(t, ro), []string{"fx__echo", "fx__read_value"})
	})
	wardentest.WantRefusal(t, wardentest.CallResult(t, ro, "fx__write_value", map[string]any{"value": "x"}), "NOT_PERMITTED", `user "reader"`, "profile readonly")
	if got := wardentest.CallText(t, dev, "fx__write_value", map[string]any{"value": "y"}); fx.Value("") != "y" {
		t.Errorf("builder's write: %q", got)
	}

	// warden stdio sends the token it is given.
	if got := wardentest.SortedToolNames(t, kcStdio(t, w.ConfigPath, w.StateDir, reader)); !slices.Equal(got, []string{"fx__echo", "fx__read_value"}) {
		t.Errorf("reader through warden stdio sees %v", got)
	}

	// The provider's key changes: a token of the new key works.
	prov.Rotate()
	if got := wardentest.SortedToolNames(t, kcConnect(t, w, prov.Token(t, "builder"), "/mcp", nil)); !slices.Equal(got, []string{"fx__echo", "fx__write_value"}) {
		t.Errorf("after the key rotated, builder sees %v", got)
	}

	// Without a token, or with one for another audience: 401 pointing at
	// the resource metadata, which is served without a token.
	stranger := prov.Token(t, "stranger")
	for token, want := range map[string]string{"": "no bearer token", stranger: "is not for Warden"} {
		code, ch := kcList(t, w, token)
		if code != http.StatusUnauthorized || !strings.Contains(ch, want) ||
			!strings.HasPrefix(ch, `Bearer resource_metadata="https://warden.test/.well-known/oauth-protected-resource"`) {
			t.Errorf("%.20q: %d %q", token, code, ch)
		}
	}
	resp, err := http.Get(w.URL("/.well-known/oauth-protected-resource"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	err = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || meta.Resource != audience || !slices.Equal(meta.AuthorizationServers, []string{prov.Issuer}) {
		t.Errorf("resource metadata: %d %+v %v", resp.StatusCode, meta, err)
	}
	for _, token := range []string{builder, reader, stranger} {
		if strings.Contains(w.Output(), token) {
			t.Error("a token is in the daemon's log")
		}
	}
}

// An operator decides on /v1 with the identity provider's token for the
// API, by role, and the decision names them wherever it is read; an
// agent's token for the MCP endpoints decides nothing.
func TestOperatorTokens(t *testing.T) {
	prov := idp.Start(t)
	prov.AddTeam("https://warden.test/mcp")
	prov.Add(idp.Agent{ID: "sam", Secret: "s", Audience: "https://warden.test/v1", Groups: []string{"security"}})
	q := fixture.NewServer(fixture.Options{})
	w := kcStart(t, map[string]any{
		"mcpServers": map[string]any{"q": map[string]any{"url": q.Serve(t)}},
		"publicURL":  "https://warden.test",
		"auth":       map[string]any{"issuer": prov.Issuer, "audience": "https://warden.test/mcp"},
		"access":     []any{map[string]any{"group": "eng", "profile": "*"}},
		"operators":  []any{map[string]any{"group": "security", "role": "reviewer"}, map[string]any{"group": "eng", "role": "admin"}},
	}, "q")
	post := func(token, path string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", w.URL(path), strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// builder is an admin by group, but holds a token for the MCP endpoints.
	if code := post(prov.Token(t, "builder"), "/v1/servers/q/approve"); code != http.StatusUnauthorized {
		t.Fatalf("an agent's token for /mcp admitting q: %d", code)
	}
	sam := prov.Token(t, "sam")
	if code := post(sam, "/v1/servers/q/quarantine"); code != http.StatusForbidden {
		t.Fatalf("a reviewer quarantining q: %d", code)
	}
	if code := post(sam, "/v1/servers/q/approve"); code != http.StatusOK {
		t.Fatalf("a reviewer admitting q: %d", code)
	}
	code, out, stderr := w.CLI(t, "decisions", "--server", "q")
	if code != 0 || !strings.Contains(out, "sam") || !strings.Contains(out, "admit") || strings.Count(out, "\n") != 2 {
		t.Errorf("warden decisions: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = w.CLI(t, "tools", "q", "--json")
	if code != 0 || strings.Count(out, `"decided_by": "sam"`) != 4 {
		t.Errorf("warden tools q --json after sam admitted it: exit %d\n%s", code, out)
	}
	if strings.Contains(w.Logs.String(), sam) {
		t.Error("the operator's token is in the daemon's log")
	}
}
