// Package callers says who calls Warden's MCP endpoints and what each may
// see: a request's bearer token is resolved to an Identity (a client of
// the config's "clients", known by its token's SHA-256, or the user and
// groups of an identity provider's access token, oidc.go), and the identity to a
// Profile, the union of the profiles the config's clients and "access"
// give it, which says whether it may see and call a server's tool of a
// write class.
//
// A Policy exists only when the config knows callers: without one, every
// request is anonymous and may see every approved tool, as before.
package callers

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/writes"
)

// Identity is who made a request, as its token says.
type Identity struct {
	User   string   // a person or service of an identity provider
	Groups []string // the user's groups
	Client string   // a name in the config's "clients"
}

// Name is how records name the caller: its user, else its client.
func (id Identity) Name() string {
	if id.User != "" {
		return id.User
	}
	return id.Client
}

// Caller is who made a request and what they may use: what travels with a
// call, from the endpoint that authenticated it to the gateway that judges
// it. The zero Caller is anonymous and unlimited (no callers configured,
// or the operator's own call).
type Caller struct {
	Identity
	Profile *Profile // nil: not limited
}

// String names the caller for a person: `user "alice"`, `client "ci-bot"`.
func (c Caller) String() string {
	if c.User != "" {
		return "user " + strconv.Quote(c.User)
	}
	return "client " + strconv.Quote(c.Client)
}

// Help is what changes what a caller may use (NOT_PERMITTED).
const Help = `To allow it, an operator changes "profiles" or "access" in Warden's config file (the daemon reloads it when saved).`

// Verifier checks a bearer token and says whose it is. It answers
// ErrUnknownToken for a token it does not know, so that the next verifier
// may; any other error refuses the request, its text said to the client
// (it must never hold the token).
type Verifier interface {
	Verify(ctx context.Context, token string) (Identity, error)
}

// ErrUnknownToken: no verifier knows the token.
var ErrUnknownToken = errors.New("the bearer token is not one Warden knows; use the token of a client in Warden's config (\"clients\")")

// maxToken bounds a bearer token: a longer one is refused unread.
const maxToken = 4096

// tokens verifies the tokens of the config's clients by their SHA-256.
type tokens struct{ clients []config.Client }

// Verify compares the token's hash with every client's, in constant time:
// how long it takes says nothing of which client's hash is nearest.
func (t tokens) Verify(_ context.Context, token string) (Identity, error) {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.clients {
		if subtle.ConstantTimeCompare(sum[:], t.clients[i].TokenSHA256[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Identity{}, ErrUnknownToken
	}
	return Identity{Client: t.clients[found].Name}, nil
}

// Policy is the config's known callers.
type Policy struct {
	verifiers []Verifier
	clients   map[string]config.Client
	profiles  map[string]config.Profile
	access    []config.Access
	operators []config.Operator
	auth      config.Auth // zero: no identity provider
	idp       Verifier    // the identity provider's tokens; nil without one
	operator  Verifier    // its tokens for /v1 (auth.OperatorAudience); nil without operators
	login     *Login      // the review page's login; nil without auth.uiClient
	metadata  string      // the URL of the resource metadata, with auth
	resource  string      // what the metadata calls Warden
}

// New is the policy of cfg, or nil when cfg knows no callers.
func New(cfg *config.Config) *Policy {
	if len(cfg.Clients) == 0 && cfg.Auth == nil {
		return nil
	}
	var known tokens
	for _, c := range cfg.Clients {
		known.clients = append(known.clients, c)
	}
	p := &Policy{verifiers: []Verifier{known}, clients: cfg.Clients, profiles: cfg.Profiles, access: cfg.Access, operators: cfg.Operators}
	if cfg.Auth != nil {
		p.auth = *cfg.Auth
		o := newOIDC(*cfg.Auth)
		p.idp = o
		p.verifiers = append(p.verifiers, o)
		if len(cfg.Operators) > 0 {
			forAPI := *cfg.Auth
			forAPI.Audience = forAPI.OperatorAudience
			p.operator = newOIDC(forAPI)
		}
		if p.auth.UIClient != "" {
			p.login = &Login{tokens: o, client: p.auth.UIClient, redirect: cfg.PublicURL + LoginCallbackPath}
		}
		p.metadata = cfg.PublicURL + MetadataPath
		p.resource = cfg.PublicURL
		if u, err := url.Parse(p.auth.Audience); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			p.resource = p.auth.Audience
		}
	}
	return p
}

// Equal reports whether p and q know the same callers and give them the
// same (nil: none known).
func (p *Policy) Equal(q *Policy) bool {
	if p == nil || q == nil {
		return p == q
	}
	return reflect.DeepEqual(p.clients, q.clients) && reflect.DeepEqual(p.profiles, q.profiles) &&
		reflect.DeepEqual(p.access, q.access) && reflect.DeepEqual(p.operators, q.operators) && p.auth == q.auth && p.metadata == q.metadata && p.resource == q.resource
}

// MetadataPath is where Warden serves its protected resource metadata.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Metadata is Warden's protected resource metadata (RFC 9728): how an MCP
// client learns which identity provider gives tokens for Warden.
type Metadata struct {
	// Resource is Warden's identifier: the audience when it is a URL (a
	// client asks for a token for it, RFC 8707), else the public URL.
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
}

// Metadata is the resource metadata of p, or nil when p has no identity
// provider (nil p: none).
func (p *Policy) Metadata() *Metadata {
	if p == nil || p.metadata == "" {
		return nil
	}
	return &Metadata{Resource: p.resource, AuthorizationServers: []string{p.auth.Issuer}, BearerMethodsSupported: []string{"header"}}
}

// Refused is why a request was not authenticated: answered 401, with
// Challenge in WWW-Authenticate.
type Refused struct {
	Description string
	Missing     bool // no credentials at all: RFC 6750 names no error then
	// Metadata is the URL of Warden's resource metadata (RFC 9728), where
	// a client learns which identity provider gives tokens for Warden;
	// "" without one.
	Metadata string
}

func (r *Refused) Error() string { return r.Description }

// Challenge is the WWW-Authenticate value of the refusal (RFC 6750, and
// RFC 9728's resource_metadata).
func (r *Refused) Challenge() string {
	var b strings.Builder
	b.WriteString("Bearer ")
	if r.Metadata != "" {
		fmt.Fprintf(&b, "resource_metadata=%s, ", quoted(r.Metadata))
	}
	if !r.Missing {
		b.WriteString(`error="invalid_token", `)
	}
	b.WriteString("error_description=" + quoted(r.Description))
	return b.String()
}

// quoted is s as an RFC 6750 quoted value, whose characters are printable
// ASCII but '"' and '\': those are written ' and /, the rest ?.
func quoted(s string) string {
	return `"` + strings.Map(func(c rune) rune {
		switch {
		case c == '"':
			return '\''
		case c == '\\':
			return '/'
		case c < 0x20 || c > 0x7e:
			return '?'
		}
		return c
	}, s) + `"`
}

// Authenticate resolves the bearer token of r to its caller. A refusal is
// a *Refused; its text never holds the token.
func (p *Policy) Authenticate(r *http.Request) (Caller, error) {
	c, err := p.authenticate(r)
	var ref *Refused
	if errors.As(err, &ref) {
		ref.Metadata = p.metadata
	}
	return c, err
}

// Bearer is r's bearer token (RFC 6750, in the Authorization header
// only), or why r has none that may be checked.
func Bearer(r *http.Request) (string, *Refused) {
	if r.URL.Query().Has("access_token") {
		return "", &Refused{Description: "a token in the URL is refused (URLs are logged); send it in the Authorization header"}
	}
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return "", &Refused{Description: "no bearer token: send Authorization: Bearer <token> with each request", Missing: true}
	}
	scheme, token, _ := strings.Cut(h[0], " ")
	token = strings.TrimSpace(token)
	switch {
	case len(h) > 1:
		return "", &Refused{Description: "more than one Authorization header: send one"}
	case !strings.EqualFold(scheme, "Bearer") || token == "":
		return "", &Refused{Description: "the Authorization header is not a bearer token: send Authorization: Bearer <token>"}
	case len(token) > maxToken:
		return "", &Refused{Description: fmt.Sprintf("the bearer token is longer than %d bytes", maxToken)}
	}
	return token, nil
}

func (p *Policy) authenticate(r *http.Request) (Caller, error) {
	token, refused := Bearer(r)
	if refused != nil {
		return Caller{}, refused
	}
	for _, v := range p.verifiers {
		id, err := v.Verify(r.Context(), token)
		if errors.Is(err, ErrUnknownToken) {
			continue
		}
		if err != nil {
			return Caller{}, &Refused{Description: err.Error()}
		}
		return Caller{Identity: id, Profile: p.Profile(id)}, nil
	}
	return Caller{}, &Refused{Description: ErrUnknownToken.Error()}
}

// Profile is what id may use: every profile its client entry and the
// matching "access" entries give it (none: nothing).
func (p *Policy) Profile(id Identity) *Profile {
	pr := &Profile{}
	add := func(name string) {
		if slices.Contains(pr.Names, name) {
			return
		}
		pr.Names = append(pr.Names, name)
		if name == config.AllProfiles {
			pr.all = true
		} else if def, ok := p.profiles[name]; ok {
			pr.rules = append(pr.rules, def)
		}
	}
	if c, ok := p.clients[id.Client]; ok && id.Client != "" {
		add(c.Profile)
	}
	for _, a := range p.access {
		if a.Client != "" && a.Client == id.Client || a.User != "" && a.User == id.User || a.Group != "" && slices.Contains(id.Groups, a.Group) {
			add(a.Profile)
		}
	}
	return pr
}

// Profile is the union of the profiles a caller has.
type Profile struct {
	Names []string // the profiles, as the config names them ("*": all)
	all   bool
	rules []config.Profile
}

// Allows reports whether the profile lets its caller see and call tool of
// server, of write class (a nil Profile allows everything). class is ""
// for a tool not known: a profile limited by class does not allow it.
func (p *Profile) Allows(server, tool string, class writes.Class) bool {
	if p == nil || p.all {
		return true
	}
	for _, r := range p.rules {
		if allows(r, server, tool, class) {
			return true
		}
	}
	return false
}

// AllowsServer reports whether the profile allows anything of server (a
// nil Profile, everything): a server's prompts, resources and completions
// go with its tools.
func (p *Profile) AllowsServer(server string) bool {
	if p == nil || p.all {
		return true
	}
	for _, r := range p.rules {
		if _, ok := r.Servers[server]; ok || r.Servers == nil {
			return true
		}
	}
	return false
}

func allows(r config.Profile, server, tool string, class writes.Class) bool {
	if r.Servers != nil {
		globs, ok := r.Servers[server]
		if !ok {
			return false
		}
		if len(globs) > 0 && !slices.ContainsFunc(globs, func(g string) bool { ok, _ := path.Match(g, tool); return ok }) {
			return false
		}
	}
	return r.Classes == nil || slices.Contains(r.Classes, string(class))
}

// String names the profiles, for a person.
func (p *Profile) String() string {
	switch {
	case p == nil:
		return "no limit"
	case len(p.Names) == 0:
		return "no profile"
	case len(p.Names) == 1:
		return "profile " + p.Names[0]
	}
	return "profiles " + strings.Join(p.Names, ", ")
}
