package idp

import (
	"context"
	"slices"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// A person logs in to a public client with PKCE: the code, exchanged with
// the verifier, gives an ID token naming them and their groups; without an
// S256 challenge the provider refuses the request.
func TestPersonLogsIn(t *testing.T) {
	p := Start(t)
	const redirect = "http://127.0.0.1:1/callback"
	p.AddPublicClient("page", redirect)
	p.AddPerson(Person{Name: "rita", Password: "pw", Groups: []string{"security"}})
	ctx := context.Background()
	prov, err := oidc.NewProvider(ctx, p.Issuer)
	if err != nil {
		t.Fatal(err)
	}
	cfg := oauth2.Config{ClientID: "page", Endpoint: prov.Endpoint(), RedirectURL: redirect, Scopes: []string{oidc.ScopeOpenID}}
	verifier := oauth2.GenerateVerifier()
	back := p.SignIn(t, cfg.AuthCodeURL("st", oidc.Nonce("n1"), oauth2.S256ChallengeOption(verifier)), "rita", "pw")
	if back.Query().Get("state") != "st" || back.Query().Get("code") == "" {
		t.Fatalf("sent back to %s", back)
	}
	tok, err := cfg.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	id, err := prov.Verifier(&oidc.Config{ClientID: "page"}).Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Groups []string `json:"groups"`
	}
	if err := id.Claims(&claims); err != nil || id.Subject != "rita" || id.Nonce != "n1" || !slices.Equal(claims.Groups, []string{"security"}) {
		t.Fatalf("ID token: sub %q nonce %q groups %v (%v)", id.Subject, id.Nonce, claims.Groups, err)
	}

	plain := p.SignIn(t, cfg.AuthCodeURL("st2", oauth2.SetAuthURLParam("code_challenge", verifier)), "rita", "pw")
	if plain.Query().Get("error") != "invalid_request" || plain.Query().Get("code") != "" {
		t.Fatalf("a request without S256 was sent back to %s", plain)
	}
}
