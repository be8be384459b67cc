package surface_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/idp"
)

const oidcAudience = "https://warden.test/mcp"

// oidcEnv serves fx to callers with tokens of a real OpenID provider:
// agent "builder" (group eng: profile dev, write_* and echo of fx),
// "reader" (by user: profile readonly) and "stranger" (tokens for
// another audience).
func oidcEnv(t testing.TB) (*env, *idp.Provider) {
	t.Helper()
	prov := idp.Start(t)
	prov.AddTeam(oidcAudience)
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	cfg, err := config.Parse("", []byte(`{
		"publicURL": "https://warden.test",
		"auth": {"issuer": "`+prov.Issuer+`", "audience": "`+oidcAudience+`"},
		"profiles": {"readonly": {"classes": ["read"]}, "dev": {"servers": {"fx": {"tools": ["write_*", "echo"]}}}},
		"access": [{"group": "eng", "profile": "dev"}, {"user": "reader", "profile": "readonly"}]
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.S.SetCallers(callers.New(cfg))
	e.WaitListed(t, "fx")
	return e, prov
}

// An identity provider's token shows its caller the tools its groups or
// user are given, on /mcp and /mcp/fx; a call outside is NOT_PERMITTED.
func TestOIDCCallersSeeTheirProfile(t *testing.T) {
	e, prov := oidcEnv(t)
	builder, reader := prov.Token(t, "builder"), prov.Token(t, "reader")
	for _, path := range []string{"/mcp", "/mcp/fx"} {
		name := func(tool string) string {
			if path == "/mcp" {
				return "fx__" + tool
			}
			return tool
		}
		for token, want := range map[string][]string{
			builder: {name(fixture.ToolEcho), name(fixture.ToolWrite)},
			reader:  {name(fixture.ToolEcho), name(fixture.ToolRead)},
		} {
			if got := toolNames(t, e.connectAs(t, token, path, nil)); !slices.Equal(got, want) {
				t.Errorf("%s: sees %v, want %v", path, got, want)
			}
		}
		text, _, code, err := callText(t, e.connectAs(t, reader, path, nil), name(fixture.ToolWrite), map[string]any{"value": "x"})
		if err != nil || code != "NOT_PERMITTED" || !strings.Contains(text, `user "reader"`) {
			t.Errorf("%s: reader writes: %q %q (%v)", path, text, code, err)
		}
	}
}

// Without a valid token: 401, pointing at the resource metadata, which
// is served without a token and names the issuer.
func TestOIDCRefusedAndMetadata(t *testing.T) {
	e, prov := oidcEnv(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	const meta = `resource_metadata="https://warden.test/.well-known/oauth-protected-resource"`
	stranger := prov.Token(t, "stranger")
	for token, want := range map[string]string{"": "no bearer token", "Bearer " + stranger: "is not for Warden", "Bearer x": "not a JWT"} {
		h := map[string]string{}
		if token != "" {
			h["Authorization"] = token
		}
		resp, body := rawPost(t, e.URL+"/mcp", init, h)
		ch := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(ch, "Bearer "+meta) || !strings.Contains(ch, want) || strings.Contains(body, stranger) {
			t.Errorf("%.20q: %d %q %s", token, resp.StatusCode, ch, body)
		}
	}
	rec := httptest.NewRecorder()
	e.S.ServeMetadata(rec, httptest.NewRequest("GET", callers.MetadataPath, nil))
	var m callers.Metadata
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || rec.Code != 200 || m.Resource != oidcAudience ||
		!slices.Equal(m.AuthorizationServers, []string{prov.Issuer}) || !slices.Equal(m.BearerMethodsSupported, []string{"header"}) {
		t.Errorf("metadata: %d %s", rec.Code, rec.Body)
	}
	e.S.SetCallers(nil)
	rec = httptest.NewRecorder()
	e.S.ServeMetadata(rec, httptest.NewRequest("GET", callers.MetadataPath, nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("metadata without auth: %d", rec.Code)
	}
}

// A config reload that changes no caller keeps the policy, and with it
// what its verifier learnt (the provider's keys, tokens checked).
func TestOIDCReloadKeepsPolicy(t *testing.T) {
	e, _ := oidcEnv(t)
	kept := e.S.Callers()
	cfg, err := config.Parse("", []byte(`{"publicURL": "https://warden.test", "auth": `+
		`{"issuer": "`+kept.Metadata().AuthorizationServers[0]+`", "audience": "`+oidcAudience+`"},
		"profiles": {"readonly": {"classes": ["read"]}, "dev": {"servers": {"fx": {"tools": ["write_*", "echo"]}}}},
		"access": [{"group": "eng", "profile": "dev"}, {"user": "reader", "profile": "readonly"}]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.S.SetCallers(callers.New(cfg))
	if e.S.Callers() != kept {
		t.Error("the same callers: the policy was replaced")
	}
	cfg.Access = cfg.Access[:1]
	changed := callers.New(cfg)
	e.S.SetCallers(changed)
	if e.S.Callers() != changed {
		t.Error("other callers: the policy was kept")
	}
}
