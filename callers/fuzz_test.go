package callers

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

// fixed are the reasons a header can be refused for: none quotes it.
var fixed = map[string]bool{
	"no bearer token: send Authorization: Bearer <token> with each request":              true,
	"the Authorization header is not a bearer token: send Authorization: Bearer <token>": true,
	"the bearer token is longer than 4096 bytes":                                         true,
	ErrUnknownToken.Error(): true,
}

// Whatever a request's Authorization header holds, Authenticate answers a
// known client or a refusal, never panics, and never says the token back.
func FuzzAuthenticate(f *testing.F) {
	for _, s := range []string{"Bearer bot-token", "bearer\tbot-token", "Bearer", "Basic x", "Bearer  ", "Bearer a b", "\x00", "Bearer " + strings.Repeat("z", 5000)} {
		f.Add(s)
	}
	p := policy(f)
	f.Fuzz(func(t *testing.T, header string) {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header["Authorization"] = []string{header}
		c, err := p.Authenticate(r)
		if err == nil {
			if c.Client == "" || c.Profile == nil {
				t.Fatalf("%q: accepted as %+v", header, c)
			}
			return
		}
		var ref *Refused
		if !errors.As(err, &ref) {
			t.Fatalf("%q: %v is no refusal", header, err)
		}
		if !fixed[ref.Description] {
			t.Fatalf("%q: refused with %q, not one of the fixed reasons", header, ref.Description)
		}
	})
}

// Whatever token a caller presents with an identity provider configured,
// Authenticate answers the agent whose token it is, a client, or a
// refusal that does not say the token back, and never panics.
func FuzzOIDCToken(f *testing.F) {
	p, prov := oidcPolicy(f)
	good := prov.Token(f, "builder")
	for _, s := range []string{good, good[:len(good)-3], strings.Replace(good, ".", "..", 1), "a.b.c", "..", "e30.e30.", "bot-token", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Header["Authorization"] = []string{"Bearer " + token}
		c, err := p.Authenticate(r)
		if err == nil {
			if c.User != "builder" && c.Client != "bot" {
				t.Fatalf("%q: accepted as %+v", token, c)
			}
			return
		}
		var ref *Refused
		if !errors.As(err, &ref) {
			t.Fatalf("%q: %v is no refusal", token, err)
		}
		if tok := strings.TrimSpace(token); len(tok) >= 8 && strings.Contains(ref.Challenge(), tok) {
			t.Fatalf("%q: the refusal says the token: %s", token, ref.Challenge())
		}
	})
}
