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
