package config

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
)

const hash = "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" // of "test"

func TestTeamFields(t *testing.T) {
	cfg, err := Parse("/x/config.json", []byte(`{
		"access": [{"client": "bot", "profile": "dev"}, {"group": "eng", "profile": "*"}],
		"clients": {"bot": {"tokenSha256": "`+strings.ToUpper(hash[7:])+`", "profile": "readonly"}},
		"profiles": {
			"readonly": {"classes": ["read"]},
			"dev": {"servers": {"github": {"tools": ["search_*", "create_issue"]}, "memory": {}}, "classes": ["read", "write"]}
		}
	}`), nil)
	if err == nil || !strings.Contains(err.Error(), `clients.bot.tokenSha256: is not "sha256:" and 64 hex digits`) {
		t.Fatalf("a hash without its prefix: %v", err)
	}
	cfg, err = Parse("/x/config.json", []byte(`{
		"access": [{"client": "bot", "profile": "dev"}, {"group": "eng", "profile": "*"}],
		"clients": {"bot": {"tokenSha256": "`+hash+`", "profile": "readonly"}},
		"profiles": {
			"readonly": {"classes": ["read"]},
			"dev": {"servers": {"github": {"tools": ["search_*", "create_issue"]}, "memory": {}}, "classes": ["read", "write"]}
		}
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Clients["bot"]; c.TokenSHA256 != sha256.Sum256([]byte("test")) || c.Profile != "readonly" || c.Name != "bot" {
		t.Errorf("client: %+v", c)
	}
	dev := cfg.Profiles["dev"]
	if got := fmt.Sprint(dev.Servers, dev.Classes); got != "map[github:[search_* create_issue] memory:[]] [read write]" {
		t.Errorf("dev: %s", got)
	}
	if ro := cfg.Profiles["readonly"]; ro.Servers != nil || len(ro.Classes) != 1 {
		t.Errorf("readonly: %+v", ro)
	}
	if got := fmt.Sprint(cfg.Access); got != "[{  bot dev} { eng  *}]" {
		t.Errorf("access: %s", got)
	}
}

func TestAuthFields(t *testing.T) {
	cfg, err := Parse("/x/config.json", []byte(`{
		"publicURL": "https://warden.example.com/",
		"auth": {"issuer": "https://idp.example.com", "audience": "https://warden.example.com/mcp"}
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PublicURL != "https://warden.example.com" {
		t.Errorf("publicURL: %q", cfg.PublicURL)
	}
	if got := fmt.Sprint(*cfg.Auth); got != "{https://idp.example.com https://warden.example.com/mcp sub groups https://warden.example.com/v1 }" {
		t.Errorf("auth with default claims: %s", got)
	}
	cfg, err = Parse("/x/config.json", []byte(`{
		"publicURL": "http://127.0.0.1:7373",
		"auth": {"issuer": "http://127.0.0.1:9000", "audience": "warden", "claims": {"user": "email", "groups": "roles"}}
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Auth; a.UserClaim != "email" || a.GroupsClaim != "roles" {
		t.Errorf("claims: %+v", a)
	}
	cfg, err = Parse("/x/config.json", []byte(`{
		"publicURL": "http://127.0.0.1:7373",
		"auth": {"issuer": "http://127.0.0.1:9000", "audience": "warden", "uiClient": "warden-ui"},
		"operators": [{"group": "security", "role": "reviewer"}, {"user": "alice", "role": "admin"}]
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth.UIClient != "warden-ui" {
		t.Errorf("uiClient: %q", cfg.Auth.UIClient)
	}
	if got := fmt.Sprint(cfg.Operators); got != "[{ security reviewer} {alice  admin}]" {
		t.Errorf("operators: %s", got)
	}
}

func TestTeamErrors(t *testing.T) {
	const pre = "config /x/config.json: "
	client := `"clients": {"bot": {"tokenSha256": "` + hash + `", "profile": "ro"}}`
	for _, tc := range []struct{ in, want string }{
		{`{` + client + `}`, pre + `clients.bot.profile: names no profile "ro"; define it in "profiles", or write "*" for every approved tool`},
		{`{` + client + `, "profiles": {"dev": {}}}`, pre + `clients.bot.profile: names no profile "ro"; name one of dev or "*", or define it in "profiles"`},
		{`{"clients": {"bot": {"tokenSha256": "sha256:abc", "profile": "*"}}}`, pre + `clients.bot.tokenSha256: is not "sha256:" and 64 hex digits…`},
		{`{"clients": {"bot": {"profile": "*"}}}`, pre + `clients.bot: needs both "tokenSha256" and "profile"…`},
		{`{"profiles": {"p": {"servers": {"gh": {"tools": ["[a-"]}}}}}`, pre + `profiles.p.servers.gh.tools[0]: "[a-" is not a valid glob…`},
		{`{"profiles": {"p": {"servers": {"gh": {"tools": ["a/b"]}}}}}`, pre + `profiles.p.servers.gh.tools[0]: "a/b" can match no tool name…`},
		{`{"profiles": {"p": {"servers": {"gh": {"tools": []}}}}}`, pre + `profiles.p.servers.gh.tools: is not a list of tool names or globs…`},
		{`{"profiles": {"p": {"servers": {"a__b": {}}}}}`, pre + `profiles.p.servers.a__b: "a__b" contains "__"…`},
		{`{"profiles": {"p": {"classes": ["reed"]}}}`, pre + `profiles.p.classes[0]: "reed" is not a class; write "read", "write" or "destructive"`},
		{`{"profiles": {"p": {"classes": []}}}`, pre + `profiles.p.classes: is not a list of write classes…`},
		{`{"profiles": {"*": {}}}`, pre + `profiles["*"]: is not a profile name one can define…`},
		{`{"profiles": {"p": {"tools": []}}}`, pre + `profiles.p.tools: unknown field; known fields are servers, classes`},
		{`{"access": [{"user": "alice"}]}`, pre + `access[0]: needs "profile" and exactly one of "user", "group" and "client"…`},
		{`{"access": [{"user": "alice", "group": "eng", "profile": "*"}]}`, pre + `access[0]: needs "profile" and exactly one of…`},
		{`{"access": [{"client": "ghost", "profile": "*"}]}`, pre + `access[0].client: names no client "ghost"; name a client defined in "clients", or remove the entry`},
		{`{"access": [{"user": "alice", "profile": "dev"}]}`, pre + `access[0].profile: names no profile "dev"…`},
		{`{"access": {"user": "alice"}}`, pre + `access: is an object, not a list…`},
		{`{"operators": {}}`, pre + `operators: is an object, not a list…`},
		{`{"operators": [{"user": "alice", "role": "admin"}]}`, pre + `operators: needs "auth"; write "auth" with the identity provider…`},
		{`{"operators": [{"user": "alice"}]}`, pre + `operators[0]: needs "role" and exactly one of "user" and "group"…`},
		{`{"operators": [{"user": "a", "group": "g", "role": "admin"}]}`, pre + `operators[0]: needs "role" and exactly one of…`},
		{`{"operators": [{"user": "alice", "role": "boss"}]}`, pre + `operators[0].role: "boss" is not a role; write "reviewer"…`},
		{`{"operators": [{"user": "alice", "role": "admin", "profile": "*"}]}`, pre + `operators[0].profile: unknown field; known fields are user, group, role`},
		{`{"auth": {"issuer": "https://idp.example", "audience": "w", "uiClient": ""}, "publicURL": "https://w.example"}`, pre + `auth.uiClient: is empty…`},
		{`{"auth": {"issuer": "https://idp.example", "audience": "w", "operatorAudience": "w"}, "publicURL": "https://w.example"}`, pre + `auth: gives operators' tokens the audience of the MCP endpoints; give "operatorAudience" an audience of its own…`},
		{`{"auth": {"issuer": "https://idp.example", "audience": "https://w.example/v1"}, "publicURL": "https://w.example"}`, pre + `auth: gives operators' tokens the audience of the MCP endpoints…`},
		{`{"auth": {}, "publicURL": "https://w.example"}`, pre + `auth: needs both "issuer" and "audience"…`},
		{`{"auth": {"issuer": "https://idp.example"}, "publicURL": "https://w.example"}`, pre + `auth: needs both "issuer" and "audience"…`},
		{`{"auth": {"issuer": "idp.example", "audience": "w"}, "publicURL": "https://w.example"}`, pre + `auth.issuer: is not an issuer URL…`},
		{`{"auth": {"issuer": "https://idp.example", "audience": ""}, "publicURL": "https://w.example"}`, pre + `auth.audience: is empty…`},
		{`{"auth": {"issuer": "https://idp.example", "audience": "w", "claims": {"user": ""}}, "publicURL": "https://w.example"}`, pre + `auth.claims.user: is empty…`},
		{`{"auth": {"issuer": "https://idp.example", "audience": "w", "claims": {"email": "e"}}, "publicURL": "https://w.example"}`, pre + `auth.claims.email: unknown field; known fields are user, groups`},
		{`{"auth": {"issuer": "https://idp.example", "audience": "w"}}`, pre + `auth: needs "publicURL"; write "publicURL": how clients reach Warden…`},
		{`{"publicURL": "warden.example.com"}`, pre + `publicURL: is not an absolute http(s) URL…`},
		{`{"publicURL": "https://warden.example.com/?a=b"}`, pre + `publicURL: is not an absolute http(s) URL…`},
	} {
		_, err := Parse("/x/config.json", []byte(tc.in), nil)
		if err == nil {
			t.Errorf("%s: no error", tc.in)
			continue
		}
		if want, prefix := strings.CutSuffix(tc.want, "…"); prefix && !strings.HasPrefix(err.Error(), want) || !prefix && err.Error() != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, err, tc.want)
		}
	}
}
