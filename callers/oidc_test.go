package callers

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/idp"
)

const audience = "https://warden.test/mcp"

// oidcPolicy is a policy whose "auth" is a real OpenID provider on
// loopback, with its team of agents (idp.AddTeam): group eng gets profile
// dev, user reader profile readonly.
func oidcPolicy(t testing.TB) (*Policy, *idp.Provider) {
	t.Helper()
	prov := idp.Start(t)
	prov.AddTeam(audience)
	cfg, err := config.Parse("", []byte(`{
		"publicURL": "https://warden.test",
		"auth": {"issuer": "`+prov.Issuer+`", "audience": "`+audience+`"},
		"clients": {"bot": {"tokenSha256": "`+hashOf("bot-token")+`", "profile": "readonly"}},
		"profiles": {"readonly": {"classes": ["read"]}, "dev": {"servers": {"github": {}}}},
		"access": [{"group": "eng", "profile": "dev"}, {"user": "reader", "profile": "readonly"}]
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg), prov
}

func authenticate(p *Policy, token string) (Caller, error) {
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return p.Authenticate(r)
}

// An identity provider's access token names its user and groups, which
// "access" maps to profiles; a client's token still works beside it.
func TestOIDCToken(t *testing.T) {
	p, prov := oidcPolicy(t)
	for agent, want := range map[string]string{"builder": `user "builder" [eng] profile dev`, "reader": `user "reader" [] profile readonly`} {
		c, err := authenticate(p, prov.Token(t, agent))
		if err != nil {
			t.Fatalf("%s: %v", agent, err)
		}
		if got := fmt.Sprint(c, " ", c.Groups, " ", c.Profile); got != want {
			t.Errorf("%s: %s, want %s", agent, got, want)
		}
	}
	if c, err := authenticate(p, "bot-token"); err != nil || c.Client != "bot" {
		t.Errorf("a client's token beside auth: %+v %v", c, err)
	}
}

// A token that is not for Warden, not from its issuer, expired, unsigned
// or not a JWT is refused, saying why, never saying the token back, and
// pointing at the resource metadata.
func TestOIDCRefusals(t *testing.T) {
	p, prov := oidcPolicy(t)
	twin := prov.Twin(t) // the same keys, another issuer
	twin.AddTeam(audience)
	good := prov.Token(t, "builder")
	header, payload, _ := strings.Cut(good, ".")
	payload, _, _ = strings.Cut(payload, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload + "."
	hs := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + payload + ".c2lnbmF0dXJl"
	forged := header + "." + payload + ".c2lnbmF0dXJl"
	for _, tc := range []struct{ name, token, want string }{
		{"another audience", prov.Token(t, "stranger"), `its audience (aud) does not hold "` + audience + `"`},
		{"expired", prov.Token(t, "late"), "the token expired at"},
		{"another issuer", twin.Token(t, "builder"), "the token was not issued by " + prov.Issuer},
		{"alg none", none, `signed with "none", which Warden does not accept`},
		{"alg HS256", hs, `signed with "HS256", which Warden does not accept`},
		{"forged signature", forged, "signature is not one of the identity provider"},
		{"opaque", "opaque-token-0123456789", "the token is not a JWT (an opaque token?)"},
		{"garbage JWT", "a.b.c", "not a well-formed signed JWT"},
	} {
		_, err := authenticate(p, tc.token)
		var ref *Refused
		if !errors.As(err, &ref) || !strings.Contains(ref.Description, tc.want) {
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.want)
			continue
		}
		ch := ref.Challenge()
		if !strings.HasPrefix(ch, `Bearer resource_metadata="https://warden.test/.well-known/oauth-protected-resource", error="invalid_token", error_description="`) ||
			strings.Contains(ch, tc.token) || strings.Contains(ref.Description, payload) {
			t.Errorf("%s: challenge %s", tc.name, ch)
		}
	}
}

// When the provider's signing key changes, a token signed with the new
// one (a kid not yet known) is checked after the key set is fetched again.
func TestOIDCKeyRotation(t *testing.T) {
	p, prov := oidcPolicy(t)
	if _, err := authenticate(p, prov.Token(t, "builder")); err != nil {
		t.Fatal(err) // the first key set is now cached
	}
	prov.Rotate()
	if c, err := authenticate(p, prov.Token(t, "builder")); err != nil || c.User != "builder" {
		t.Fatalf("a token of the new key: %+v %v", c, err)
	}
	prov.Rotate()
	if _, err := authenticate(p, prov.Token(t, "reader")); err != nil {
		t.Fatalf("a token of the third key: %v", err)
	}
}

// The resource metadata names the issuer, and the audience as the
// resource (it is a URL).
func TestOIDCMetadata(t *testing.T) {
	p, prov := oidcPolicy(t)
	m := p.Metadata()
	if got := fmt.Sprint(*m); got != "{"+audience+" ["+prov.Issuer+"] [header]}" {
		t.Errorf("metadata: %s", got)
	}
	if policy(t).Metadata() != nil {
		t.Error("metadata without auth")
	}
}

// BenchmarkAuthenticate is the check of one request's token alone: a
// client's (a hash), an identity provider's remembered (a hash), and the
// JWT check itself (signature, claims) with the issuer's keys cached.
func BenchmarkAuthenticate(b *testing.B) {
	p, prov := oidcPolicy(b)
	jwt := prov.Token(b, "builder")
	for name, token := range map[string]string{"client": "bot-token", "oidc": jwt} {
		b.Run(name, func(b *testing.B) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.Header.Set("Authorization", "Bearer "+token)
			for b.Loop() {
				if _, err := p.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("oidc-check", func(b *testing.B) {
		o := p.verifiers[1].(*oidcTokens)
		for b.Loop() {
			if _, _, err := o.check(context.Background(), jwt); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A token checked once is taken on trust for a minute at most, and never
// past its exp: the clock moves on, and the same token is refused.
func TestOIDCRemembersNoLonger(t *testing.T) {
	p, prov := oidcPolicy(t)
	o := p.verifiers[1].(*oidcTokens)
	token := prov.Token(t, "builder") // five minutes
	if _, err := authenticate(p, token); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, tc := range []struct {
		after time.Duration
		ok    bool
	}{{30 * time.Second, true}, {4 * time.Minute, true}, {7 * time.Minute, false}} {
		o.now = func() time.Time { return start.Add(tc.after) }
		if _, err := authenticate(p, token); (err == nil) != tc.ok {
			t.Errorf("after %s: %v", tc.after, err)
		}
	}
}

// Requests checked at once, new tokens and remembered ones, race nothing.
func TestOIDCConcurrent(t *testing.T) {
	p, prov := oidcPolicy(t)
	tokens := []string{prov.Token(t, "builder"), prov.Token(t, "reader"), prov.Token(t, "builder")}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if _, err := authenticate(p, tokens[i%len(tokens)]); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// With the identity provider down, a token is refused saying so (a 401
// the client may retry), and Warden reads the provider again later.
func TestOIDCProviderDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + l.Addr().String()
	l.Close()
	p := New(&config.Config{PublicURL: "https://warden.test", Auth: &config.Auth{Issuer: issuer, Audience: audience, UserClaim: "sub", GroupsClaim: "groups"}})
	_, err = authenticate(p, "e30.e30.c2ln")
	var ref *Refused
	if !errors.As(err, &ref) || !strings.Contains(ref.Description, "the identity provider "+issuer+" could not be asked for its keys") {
		t.Errorf("provider down: %v", err)
	}
	if p.verifiers[1].(*oidcTokens).found != nil {
		t.Error("a failed discovery was kept")
	}
}

// The identity provider is asked a burst of 5 times, then about once a
// second: 20 requests at once pass 5.
func TestOIDCAskedSeldom(t *testing.T) {
	var sent atomic.Int32
	lt := limitedTransport{next: roundTrip(func(*http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}), limit: newOIDC(config.Auth{}).client.Transport.(limitedTransport).limit}
	refused := 0
	for range 20 {
		if _, err := lt.RoundTrip(httptest.NewRequest("GET", "http://127.0.0.1/keys", nil)); err != nil {
			refused++
		}
	}
	if sent.Load() > 6 || refused < 14 {
		t.Errorf("%d sent, %d refused", sent.Load(), refused)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
