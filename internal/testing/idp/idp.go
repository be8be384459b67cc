// Package idp runs a real OpenID provider for tests, on loopback: zitadel's
// op package (the library behind its example provider) with its example
// storage, and agents that get JWT access tokens with the
// client-credentials grant, each for the audience and with the groups a
// test chose. People log in to public clients with the authorization code
// grant and PKCE (login.go). Its signing key can be rotated mid-test.
package idp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Agent is a service account of the provider: a client-credentials
// client whose tokens name it as their subject.
type Agent struct {
	ID, Secret string
	Audience   string        // the token's aud
	Groups     []string      // its "groups" claim
	Lifetime   time.Duration // 0: five minutes; negative: expired when issued
}

// Provider is a running OpenID provider.
type Provider struct {
	Issuer string // its URL, http://127.0.0.1:port
	keys   *keyring
	store  *agents
}

// keyring is the provider's signing key, which Rotate replaces; the key
// it replaced is still published, as providers do while old tokens live.
type keyring struct {
	mu       sync.Mutex
	current  *signingKey
	previous *signingKey
}

func (k *keyring) rotate() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.previous, k.current = k.current, newKey()
}

func newKey() *signingKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return &signingKey{id: rand.Text(), key: key}
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (s *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (s *signingKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (s *signingKey) ID() string                                  { return s.id }
func (s *signingKey) Use() string                                 { return "sig" }

// publicKey is a signing key as the key set publishes it.
type publicKey struct{ *signingKey }

func (p publicKey) Key() any { return &p.key.PublicKey }

// Key is the private key, for signing.
func (s *signingKey) Key() any { return s.key }

// Start runs a provider on loopback until the test ends.
func Start(t testing.TB) *Provider { return start(t, &keyring{current: newKey()}) }

// Twin runs another provider, at its own address (so another issuer),
// that signs with p's keys: its tokens pass p's signature check and no
// other.
func (p *Provider) Twin(t testing.TB) *Provider { return start(t, p.keys) }

func start(t testing.TB, keys *keyring) *Provider {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + l.Addr().String()
	ppl := &people{byName: map[string]Person{}}
	st := &agents{Storage: storage.NewStorageWithClients(ppl, map[string]*storage.Client{}), keys: keys, byID: map[string]Agent{},
		people: ppl, public: map[string]*storage.Client{}}
	var cryptoKey [32]byte
	_, _ = rand.Read(cryptoKey[:])
	prov, err := op.NewOpenIDProvider(issuer, &op.Config{CryptoKey: cryptoKey, CodeMethodS256: true}, st, op.WithAllowInsecure())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(loginPath, &loginPage{storage: st, callback: func(ctx context.Context, id string) string {
		return op.AuthCallbackURL(prov)(op.ContextWithIssuer(ctx, issuer), id)
	}})
	mux.Handle("/", prov)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &Provider{Issuer: issuer, keys: keys, store: st}
}

// Add makes a an agent of the provider.
func (p *Provider) Add(a Agent) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.byID[a.ID] = a
}

// AddTeam adds the agents tests share, their tokens for audience:
// builder (group eng), reader (no group), stranger (group eng, tokens for
// another audience) and late (group eng, tokens expired when issued).
func (p *Provider) AddTeam(audience string) {
	eng := []string{"eng"}
	for _, a := range []Agent{
		{ID: "builder", Secret: "b", Audience: audience, Groups: eng},
		{ID: "reader", Secret: "r", Audience: audience},
		{ID: "stranger", Secret: "s", Audience: "https://elsewhere.test", Groups: eng},
		{ID: "late", Secret: "l", Audience: audience, Groups: eng, Lifetime: -1},
	} {
		p.Add(a)
	}
}

// Token is a fresh access token of agent id, got from the provider's
// token endpoint with the client-credentials grant. (Read without
// x/oauth2, which refuses the negative expires_in of an expired token.)
func (p *Provider) Token(t testing.TB, id string) string {
	t.Helper()
	p.store.mu.Lock()
	a := p.store.byID[id]
	p.store.mu.Unlock()
	resp, err := http.PostForm(p.Issuer+"/oauth/token", url.Values{"grant_type": {"client_credentials"},
		"client_id": {a.ID}, "client_secret": {a.Secret}})
	if err != nil {
		t.Fatalf("agent %s's token: %v", id, err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("agent %s's token: %s %v", id, resp.Status, err)
	}
	return tok.AccessToken
}

// Rotate makes the provider sign with a new key from now on.
func (p *Provider) Rotate() { p.keys.rotate() }

// agents is the example storage, with the test's agents as the
// client-credentials clients and the keyring's keys.
type agents struct {
	*storage.Storage
	keys   *keyring
	people *people
	mu     sync.Mutex
	byID   map[string]Agent
	public map[string]*storage.Client // the public clients people log in to
}

func (s *agents) agent(id string) (Agent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.byID[id]
	return a, ok
}

func (s *agents) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	a, ok := s.agent(id)
	if !ok || a.Secret != secret {
		return nil, errors.New("wrong client id or secret")
	}
	return agentClient{storage.WebClient(id, secret)}, nil
}

func (s *agents) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	a, ok := s.agent(id)
	if !ok {
		return nil, fmt.Errorf("no agent %q", id)
	}
	return &oidc.JWTTokenRequest{Subject: a.ID, Audience: []string{a.Audience}, Scopes: scopes}, nil
}

func (s *agents) CreateAccessToken(_ context.Context, r op.TokenRequest) (string, time.Time, error) {
	a, _ := s.agent(r.GetSubject())
	life := a.Lifetime
	switch {
	case life == 0:
		life = 5 * time.Minute
	case life < 0:
		life = -time.Hour // past any verifier's skew
	}
	return rand.Text(), time.Now().Add(life), nil
}

func (s *agents) GetPrivateClaimsFromScopes(_ context.Context, subject, _ string, _ []string) (map[string]any, error) {
	a, _ := s.agent(subject)
	return map[string]any{"groups": a.Groups}, nil
}

func (s *agents) SigningKey(context.Context) (op.SigningKey, error) {
	s.keys.mu.Lock()
	defer s.keys.mu.Unlock()
	return s.keys.current, nil
}

func (s *agents) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *agents) KeySet(context.Context) ([]op.Key, error) {
	s.keys.mu.Lock()
	defer s.keys.mu.Unlock()
	set := []op.Key{publicKey{s.keys.current}}
	if s.keys.previous != nil {
		set = append(set, publicKey{s.keys.previous})
	}
	return set, nil
}

// agentClient is a client of the client-credentials grant whose access
// tokens are JWTs.
type agentClient struct{ *storage.Client }

func (agentClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (agentClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
