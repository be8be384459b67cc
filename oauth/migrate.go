package oauth

import (
	"context"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/wardenmcp/warden/config"
)

// A client registered dynamically is bound to the authorization server that
// issued it (SEP-2352): a login offers it again only to that server, named
// by its issuer, and the SDK's handler refuses it to any other. When the
// server's protected resource metadata has moved to another authorization
// server, the login registers Warden there anew instead of failing.

// storedClient is the client rec registered dynamically, bound to its
// issuer, when a login with this redirect URI may offer it again; else nil.
func storedClient(rec *Record, callback string) *oauthex.ClientCredentials {
	if rec == nil || !rec.Registered || rec.Issuer == "" || rec.RedirectURL != callback {
		return nil
	}
	c := &oauthex.ClientCredentials{ClientID: rec.ClientID, Issuer: rec.Issuer}
	if rec.ClientSecret != "" {
		c.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: rec.ClientSecret}
	}
	return c
}

// movedFrom reports whether l's discovery found an authorization server
// other than issuer before any authorization URL was made: the failure was
// the stored client's, refused there, and nothing was shown to the person.
func (l *login) movedFrom(issuer string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.asked != "" || len(l.metas) == 0 {
		return false
	}
	return !sameIssuer(l.metas[len(l.metas)-1].Issuer, issuer)
}

// sameIssuer compares issuers as the SDK does when it binds a client to
// one: a single trailing slash aside.
func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// reregister runs l's discovery again without the stored client, so that
// Warden registers with the authorization server the server names now.
func (m *Manager) reregister(ctx context.Context, cfg *config.Server, prior []string, callback string, l *login, req *http.Request, refused *http.Response) error {
	l.mu.Lock()
	issuer := l.metas[len(l.metas)-1].Issuer
	l.mu.Unlock()
	m.log.Info("the upstream's authorization server changed: registering Warden with the new one", "server", cfg.Name, "issuer", issuer)
	h, err := auth.NewAuthorizationCodeHandler(m.handlerConfig(cfg, prior, nil, callback, l))
	if err != nil {
		return err
	}
	return h.Authorize(ctx, req, refused)
}
