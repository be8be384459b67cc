package callers

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/wardenmcp/warden/config"
	"golang.org/x/oauth2"
	"golang.org/x/time/rate"
)

// An identity provider's access tokens ("auth"): JWTs whose signature is
// checked with the issuer's keys (its discovery document names them; they
// are fetched again when a token names a key not yet known, so the
// provider may rotate them), and whose iss, aud, exp and nbf are checked
// by go-oidc. Their claims name the user and groups.

// skew is how far the issuer's clock may be ahead of Warden's for exp
// (go-oidc allows nbf five minutes more).
const skew = time.Minute

// signingAlgs are the algorithms a token may be signed with: the
// asymmetric ones (never "none"; no shared-secret HMAC).
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512, oidc.EdDSA,
}

// oidcTokens verifies the access tokens of the issuer of auth.
type oidcTokens struct {
	auth   config.Auth
	client *http.Client
	now    func() time.Time

	mu    sync.Mutex
	found *discovery // nil until discovery succeeds

	// verified remembers, by the token's SHA-256, whose a token checked
	// lately is, so the next requests with it cost a hash, not a signature
	// check (66 µs for RS256 here, BenchmarkAuthenticate).
	cacheMu  sync.Mutex
	verified map[[sha256.Size]byte]verified
}

// verified is a token that was checked: its identity, until until.
type verified struct {
	id    Identity
	until time.Time
}

const (
	remember    = time.Minute // how long a checked token is taken on trust, at most (never past its exp)
	maxVerified = 4096        // tokens remembered; past it, all are forgotten
)

// newOIDC is the Verifier of auth's issuer's access tokens. It reads the
// issuer when first asked, so Warden starts while its identity provider
// is down, and then about once a second at most (a burst of 5): a stream
// of tokens naming unknown keys must not become a stream of requests to
// the identity provider.
func newOIDC(auth config.Auth) *oidcTokens {
	client := &http.Client{Timeout: 10 * time.Second,
		Transport: limitedTransport{next: http.DefaultTransport, limit: rate.NewLimiter(1, 5)}}
	return &oidcTokens{auth: auth, client: client, now: time.Now, verified: map[[sha256.Size]byte]verified{}}
}

// limitedTransport sends requests no faster than its limit allows, and
// refuses the rest.
type limitedTransport struct {
	next  http.RoundTripper
	limit *rate.Limiter
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.limit.Allow() {
		return nil, errors.New("the identity provider was asked too often; try again in a second")
	}
	return t.next.RoundTrip(r)
}

// discovery is what the issuer's discovery document gave.
type discovery struct {
	endpoint oauth2.Endpoint // where a person logs in (login.go)
	keys     oidc.KeySet
	access   *oidc.IDTokenVerifier // of access tokens for Warden
}

// discovered is what the issuer's discovery document gives, read the
// first time.
func (o *oidcTokens) discovered(ctx context.Context) (*discovery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.found != nil {
		return o.found, nil
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(context.WithoutCancel(ctx), o.client), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, o.auth.Issuer)
	if err != nil {
		return nil, fmt.Errorf("the identity provider %s could not be asked for its keys (%v); try again shortly", o.auth.Issuer, err)
	}
	// The key set fetches with the context it was made with: the client,
	// without the timeout of discovery (the client has its own).
	d := &discovery{endpoint: p.Endpoint(), keys: oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), o.client), jwksURL(p))}
	d.access = o.verifier(d.keys, o.auth.Audience)
	o.found = d
	return d, nil
}

// verifier checks tokens of the issuer, signed with one of keys, for
// audience.
func (o *oidcTokens) verifier(keys oidc.KeySet, audience string) *oidc.IDTokenVerifier {
	return oidc.NewVerifier(o.auth.Issuer, keys, &oidc.Config{
		ClientID:             audience,
		SupportedSigningAlgs: signingAlgs,
		Now:                  func() time.Time { return o.now().Add(-skew) },
	})
}

// jwksURL is the key set URL p's discovery document names.
func jwksURL(p *oidc.Provider) string {
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	_ = p.Claims(&doc) // the document was decoded by NewProvider: it holds it
	return doc.JWKS
}

// Verify checks token and names its user and groups. It answers every
// token it is given: it is the last verifier asked.
func (o *oidcTokens) Verify(ctx context.Context, token string) (Identity, error) {
	sum := sha256.Sum256([]byte(token))
	now := o.now()
	o.cacheMu.Lock()
	v, ok := o.verified[sum]
	o.cacheMu.Unlock()
	if ok && now.Before(v.until) {
		return v.id, nil
	}
	id, exp, err := o.check(ctx, token)
	if err != nil {
		return Identity{}, err
	}
	o.cacheMu.Lock()
	if len(o.verified) >= maxVerified {
		clear(o.verified)
	}
	until := now.Add(remember)
	if exp.Before(until) {
		until = exp
	}
	o.verified[sum] = verified{id: id, until: until}
	o.cacheMu.Unlock()
	return id, nil
}

// check verifies token with the issuer's keys: whose it is, and when it
// expires.
func (o *oidcTokens) check(ctx context.Context, token string) (Identity, time.Time, error) {
	d, err := o.discovered(ctx)
	if err != nil {
		return Identity{}, time.Time{}, err
	}
	t, err := d.access.Verify(ctx, token)
	if err != nil {
		return Identity{}, time.Time{}, o.reason(token, err)
	}
	id, err := o.identity(t)
	return id, t.Expiry, err
}

// identity is whom a verified token (an access token, or a person's ID
// token) names: its user and groups, by the claims "auth" says.
func (o *oidcTokens) identity(t *oidc.IDToken) (Identity, error) {
	var claims map[string]any
	if err := t.Claims(&claims); err != nil {
		return Identity{}, errors.New("the token's claims are not a JSON object")
	}
	user, _ := claims[o.auth.UserClaim].(string)
	if user == "" {
		return Identity{}, fmt.Errorf("the token has no %q claim naming its user (Warden's \"auth\".\"claims\".\"user\")", o.auth.UserClaim)
	}
	return Identity{User: user, Groups: groups(claims[o.auth.GroupsClaim])}, nil
}

// groups reads a groups claim: a list of names, or one name.
func groups(v any) []string {
	switch g := v.(type) {
	case string:
		return []string{g}
	case []any:
		var out []string
		for _, x := range g {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// reason says, for the client, why go-oidc refused token, in words that
// hold nothing of the token but what the issuer signed.
func (o *oidcTokens) reason(token string, err error) error {
	var expired *oidc.TokenExpiredError
	msg := err.Error()
	switch {
	case errors.As(err, &expired):
		return fmt.Errorf("the token expired at %s; get a new one from %s", expired.Expiry.UTC().Format(time.RFC3339), o.auth.Issuer)
	case strings.HasPrefix(msg, "oidc: malformed jwt"):
		return malformed(token)
	case strings.HasPrefix(msg, "failed to verify signature"):
		if strings.Contains(msg, "fetching keys") {
			return fmt.Errorf("the token names a key the identity provider %s did not give (its keys could not be fetched now); try again shortly", o.auth.Issuer)
		}
		return fmt.Errorf("the token's signature is not one of the identity provider %s's keys", o.auth.Issuer)
	case strings.HasPrefix(msg, "oidc: id token issued by a different provider"):
		return fmt.Errorf("the token was not issued by %s, the issuer Warden trusts", o.auth.Issuer)
	case strings.HasPrefix(msg, "oidc: expected audience"):
		return fmt.Errorf("the token is not for Warden: its audience (aud) does not hold %q; ask the identity provider for a token for that audience", o.auth.Audience)
	case strings.Contains(msg, "before the nbf"):
		return errors.New("the token is not valid yet (nbf)")
	}
	return errors.New("the token could not be verified")
}

// malformed says why a token go-jose would not parse is refused.
func malformed(token string) error {
	if strings.Count(token, ".") != 2 {
		return errors.New("the token is not a JWT (an opaque token?): Warden checks the identity provider's JWT access tokens, or a client's token from its config")
	}
	all := append([]jose.SignatureAlgorithm{"none", jose.HS256, jose.HS384, jose.HS512}, algs()...)
	jws, err := jose.ParseSigned(token, all)
	if err != nil || len(jws.Signatures) != 1 {
		return errors.New("the token is not a well-formed signed JWT")
	}
	return fmt.Errorf("the token is signed with %q, which Warden does not accept (it accepts %s)",
		jws.Signatures[0].Header.Algorithm, strings.Join(signingAlgs, ", "))
}

func algs() []jose.SignatureAlgorithm {
	out := make([]jose.SignatureAlgorithm, len(signingAlgs))
	for i, a := range signingAlgs {
		out[i] = jose.SignatureAlgorithm(a)
	}
	return out
}
