package callers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// A person logs in to the review page through the identity provider of
// "auth", as its public client "auth.uiClient": the authorization code
// grant with PKCE (S256), then the ID token, checked like an access token
// but for the audience uiClient, names the person by the same claims.
// Package ui keeps the state, nonce and verifier of each login.

// LoginCallbackPath is where the identity provider sends the browser back:
// <publicURL>/ui/callback is the redirect URL to register for uiClient.
const LoginCallbackPath = "/ui/callback"

// loginScopes are asked for: openid for the ID token; profile and email
// for the claims a user claim commonly names (preferred_username, email).
var loginScopes = []string{oidc.ScopeOpenID, "profile", "email"}

// Login is the identity provider's login for the review page.
type Login struct {
	tokens   *oidcTokens
	client   string // auth.uiClient
	redirect string // <publicURL>/ui/callback
}

// exchangeClient sends the code exchange: not through the rate limit of
// discovery and keys (a person's login is not a flood of unknown keys).
var exchangeClient = &http.Client{Timeout: 10 * time.Second}

// Login is how people log in to the review page, or nil when the config
// names no "auth.uiClient" (or no callers: nil p).
func (p *Policy) Login() *Login {
	if p == nil {
		return nil
	}
	return p.login
}

// Issuer is the identity provider's URL, to name it to a person.
func (l *Login) Issuer() string { return l.tokens.auth.Issuer }

func (l *Login) config(d *discovery) *oauth2.Config {
	return &oauth2.Config{ClientID: l.client, Endpoint: d.endpoint, RedirectURL: l.redirect, Scopes: loginScopes}
}

// AuthURL is where to send the browser to log in: the identity provider's
// authorization endpoint, asked for a code for state, an ID token holding
// nonce, and the S256 challenge of verifier.
func (l *Login) AuthURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	d, err := l.tokens.discovered(ctx)
	if err != nil {
		return "", err
	}
	return l.config(d).AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), nil
}

// Finish exchanges the code the identity provider sent back (with the
// login's PKCE verifier) and checks the ID token it answers: signed by the
// issuer, for uiClient, holding the login's nonce. It answers whom the
// token names. Its errors say what went wrong, never a token.
func (l *Login) Finish(ctx context.Context, code, verifier, nonce string) (Identity, error) {
	d, err := l.tokens.discovered(ctx)
	if err != nil {
		return Identity{}, err
	}
	tok, err := l.config(d).Exchange(context.WithValue(ctx, oauth2.HTTPClient, exchangeClient), code, oauth2.VerifierOption(verifier))
	var refused *oauth2.RetrieveError
	switch {
	case errors.As(err, &refused):
		return Identity{}, fmt.Errorf("the identity provider %s refused the login's code (%s %s); log in again", l.Issuer(), refused.ErrorCode, refused.ErrorDescription)
	case err != nil:
		return Identity{}, fmt.Errorf("the identity provider %s could not be asked to finish the login (%v); try again shortly", l.Issuer(), err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fmt.Errorf("the identity provider %s answered without an ID token; is the client %q allowed the openid scope?", l.Issuer(), l.client)
	}
	t, err := l.tokens.verifier(d.keys, l.client).Verify(ctx, raw)
	if err != nil {
		return Identity{}, fmt.Errorf("the identity provider's ID token was refused (%v); log in again", err)
	}
	if t.Nonce != nonce {
		return Identity{}, errors.New("the identity provider's ID token is not for this login (its nonce differs); log in again")
	}
	return l.tokens.identity(t)
}
