package oauth

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// A login retries without its stored client only when discovery found
// another authorization server and no authorization URL was made yet.
func TestMovedFrom(t *testing.T) {
	for _, c := range []struct {
		name   string
		seen   []string // issuers of the metadata discovery fetched, in order
		asked  string
		issuer string
		want   bool
	}{
		{"another server", []string{"https://as2"}, "", "https://as1", true},
		{"the same server", []string{"https://as1"}, "", "https://as1", false},
		{"the same, a trailing slash aside", []string{"https://as1/"}, "", "https://as1", false},
		{"the last one seen counts", []string{"https://as2", "https://as1"}, "", "https://as1", false},
		{"no metadata seen", nil, "", "https://as1", false},
		{"a URL was already shown", []string{"https://as2"}, "https://as2/authorize?state=x", "https://as1", false},
	} {
		l := &login{asked: c.asked}
		for _, iss := range c.seen {
			l.metas = append(l.metas, &oauthex.AuthServerMeta{Issuer: iss})
		}
		if got := l.movedFrom(c.issuer); got != c.want {
			t.Errorf("%s: movedFrom = %v, want %v", c.name, got, c.want)
		}
	}
}

// Only a dynamically registered client with a known issuer and the same
// redirect URI is offered again, bound to its issuer.
func TestStoredClient(t *testing.T) {
	rec := &Record{Registered: true, Issuer: "https://as1", ClientID: "c", ClientSecret: "s", RedirectURL: "http://127.0.0.1:1/oauth/callback"}
	c := storedClient(rec, rec.RedirectURL)
	if c == nil || c.ClientID != "c" || c.Issuer != "https://as1" || c.ClientSecretAuth == nil || c.ClientSecretAuth.ClientSecret != "s" {
		t.Fatalf("storedClient = %+v, want client c bound to https://as1 with its secret", c)
	}
	for name, r := range map[string]*Record{
		"configured":       {Issuer: rec.Issuer, ClientID: "c", RedirectURL: rec.RedirectURL},
		"issuer unknown":   {Registered: true, ClientID: "c", RedirectURL: rec.RedirectURL},
		"another redirect": {Registered: true, Issuer: rec.Issuer, ClientID: "c", RedirectURL: "http://127.0.0.1:2/oauth/callback"},
	} {
		if c := storedClient(r, rec.RedirectURL); c != nil {
			t.Errorf("%s: storedClient = %+v, want nil", name, c)
		}
	}
	if storedClient(nil, rec.RedirectURL) != nil {
		t.Error("no record: want nil")
	}
}
