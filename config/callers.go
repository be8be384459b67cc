package config

import (
	"encoding/hex"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
)

// Known callers: "clients" (callers known by a bearer token), "profiles"
// (what a caller may see and call) and "access" (who gets which profile).
// Package callers puts them to work; here they are only read and checked.

// AllProfiles is the profile name that grants every approved tool.
const AllProfiles = "*"

// Client is one entry of "clients": a caller known by its bearer token.
// Only the token's SHA-256 is written in the file, never the token.
type Client struct {
	Name        string   // map key
	TokenSHA256 [32]byte // "tokenSha256": "sha256:<hex>"
	Profile     string   // a key of Profiles, or AllProfiles
}

// Profile is one entry of "profiles": the tools it allows. Both limits
// apply when both are set; a profile with neither allows every tool.
type Profile struct {
	Name string // map key
	// Servers, when not nil, limits to these servers, each to the tools
	// whose names match one of its globs (path.Match); a server with no
	// globs allows all its tools.
	Servers map[string][]string
	// Classes, when not nil, limits to tools of these write classes
	// (ClassRead, ClassWrite, ClassDestructive).
	Classes []string
}

// Access is one entry of "access": the callers it names get Profile.
// Exactly one of User, Group and Client is set.
type Access struct {
	User, Group, Client string
	Profile             string // a key of Profiles, or AllProfiles
}

// Operator is one entry of "operators": the people it names (by the
// identity provider's user or group) get Role on /v1 and /ui/. Exactly one
// of User and Group is set.
type Operator struct {
	User, Group string
	Role        Role
}

// Role is what an operator may do.
type Role string

const (
	// RoleReviewer reads everything, approves and blocks.
	RoleReviewer Role = "reviewer"
	// RoleAdmin also clears latches, quarantines and edits servers. The
	// local operator (the CLI, the api-token) is an admin.
	RoleAdmin Role = "admin"
)

var (
	operatorFields = []string{"user", "group", "role"}
	clientFields   = []string{"tokenSha256", "profile"}
	profileFields  = []string{"servers", "classes"}
	profileServer  = []string{"tools"}
	accessFields   = []string{"user", "group", "client", "profile"}
)

// named is a profile or client named somewhere, checked once the whole
// file is read (it may be defined further down).
type named struct {
	name, path string
	v          *hujson.Value
}

// teamRefs are the names the team fields refer to.
type teamRefs struct{ profiles, clients []named }

func (d *decoder) clients(v *hujson.Value, p string, cfg *Config, refs *teamRefs) error {
	obj, err := d.object(v, p, `write an object such as {"ci-bot": {"tokenSha256": "sha256:<hex>", "profile": "readonly"}}`)
	if err != nil {
		return err
	}
	cfg.Clients = map[string]Client{}
	return d.each(obj, p, func(name string, m *hujson.ObjectMember, cp string) error {
		if name == "" {
			return d.errAt(&m.Name, cp, "client name is empty", "name the client, such as \"ci-bot\"; activity records it")
		}
		cobj, err := d.object(&m.Value, cp, `write an object such as {"tokenSha256": "sha256:<hex>", "profile": "readonly"}`)
		if err != nil {
			return err
		}
		c := Client{Name: name}
		var hashed bool
		err = d.fields(cobj, cp, clientFields, func(f string, v *hujson.Value, fp string) error {
			s, err := d.str(v, fp)
			if err != nil {
				return err
			}
			switch f {
			case "tokenSha256":
				h, ok := strings.CutPrefix(s, "sha256:")
				b, err := hex.DecodeString(h)
				if !ok || err != nil || len(b) != len(c.TokenSHA256) {
					return d.errAt(v, fp, `is not "sha256:" and 64 hex digits`,
						`write the SHA-256 of the client's token, such as the output of: printf %s "$TOKEN" | sha256sum (prefixed "sha256:")`)
				}
				copy(c.TokenSHA256[:], b)
				hashed = true
			case "profile":
				c.Profile = s
				refs.profiles = append(refs.profiles, named{s, fp, v})
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !hashed || c.Profile == "" {
			return d.errAt(&m.Value, cp, `needs both "tokenSha256" and "profile"`,
				`write {"tokenSha256": "sha256:<hex>", "profile": "<a profile, or \"*\" for all>"}`)
		}
		cfg.Clients[name] = c
		return nil
	})
}

func (d *decoder) profiles(v *hujson.Value, p string, cfg *Config) error {
	obj, err := d.object(v, p, `write an object such as {"readonly": {"classes": ["read"]}}`)
	if err != nil {
		return err
	}
	cfg.Profiles = map[string]Profile{}
	return d.each(obj, p, func(name string, m *hujson.ObjectMember, pp string) error {
		if name == "" || name == AllProfiles {
			return d.errAt(&m.Name, pp, "is not a profile name one can define", `name it with letters, digits, "_" and "-" ("*" stands for every tool and needs no definition)`)
		}
		pobj, err := d.object(&m.Value, pp, `write an object such as {"classes": ["read"]} or {"servers": {"github": {"tools": ["search_*"]}}}`)
		if err != nil {
			return err
		}
		prof := Profile{Name: name}
		err = d.fields(pobj, pp, profileFields, func(f string, v *hujson.Value, fp string) error {
			if f == "classes" {
				return d.profileClasses(v, fp, &prof)
			}
			return d.profileServers(v, fp, &prof)
		})
		cfg.Profiles[name] = prof
		return err
	})
}

func (d *decoder) profileClasses(v *hujson.Value, p string, prof *Profile) error {
	arr, ok := v.Value.(*hujson.Array)
	if !ok || len(arr.Elements) == 0 {
		return d.errAt(v, p, "is not a list of write classes", `write a list such as ["read"] (classes: "read", "write", "destructive")`)
	}
	prof.Classes = []string{}
	for i := range arr.Elements {
		e := &arr.Elements[i]
		s, err := d.str(e, index(p, i))
		if err != nil {
			return err
		}
		if !slices.Contains(classes, s) {
			return d.errAt(e, index(p, i), strconv.Quote(s)+" is not a class", `write "read", "write" or "destructive"`)
		}
		prof.Classes = append(prof.Classes, s)
	}
	return nil
}

func (d *decoder) profileServers(v *hujson.Value, p string, prof *Profile) error {
	obj, err := d.object(v, p, `write an object such as {"github": {"tools": ["search_*"]}, "memory": {}}`)
	if err != nil {
		return err
	}
	prof.Servers = map[string][]string{}
	return d.each(obj, p, func(server string, m *hujson.ObjectMember, sp string) error {
		if problem, fix := nameProblem(server); problem != "" {
			return d.errAt(&m.Name, sp, problem, fix)
		}
		sobj, err := d.object(&m.Value, sp, `write an object such as {"tools": ["search_*", "create_issue"]}, or {} for all its tools`)
		if err != nil {
			return err
		}
		var globs []string
		err = d.fields(sobj, sp, profileServer, func(_ string, v *hujson.Value, tp string) error {
			arr, ok := v.Value.(*hujson.Array)
			if !ok || len(arr.Elements) == 0 {
				return d.errAt(v, tp, "is not a list of tool names or globs", `write a list such as ["search_*", "create_issue"], or leave "tools" out for all the server's tools`)
			}
			for i := range arr.Elements {
				e := &arr.Elements[i]
				g, err := d.str(e, index(tp, i))
				if err != nil {
					return err
				}
				if problem := globProblem(g); problem != "" {
					return d.errAt(e, index(tp, i), problem, `write a tool name, or a glob such as "search_*" ("*" any run of characters, "?" one, "[a-z]" a set)`)
				}
				globs = append(globs, g)
			}
			return nil
		})
		prof.Servers[server] = globs
		return err
	})
}

// globProblem says why g, a tool glob, can match no tool name: malformed,
// empty, or holding a character no tool name has ("/" is one path.Match
// never matches with "*").
func globProblem(g string) string {
	if _, err := path.Match(g, ""); err != nil {
		return strconv.Quote(g) + " is not a valid glob"
	}
	if g == "" || strings.ContainsAny(g, "/ \t\r\n") {
		return strconv.Quote(g) + " can match no tool name"
	}
	return ""
}

func (d *decoder) access(v *hujson.Value, p string, cfg *Config, refs *teamRefs) error {
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		return d.typeErr(v, p, "a list", `write a list such as [{"group": "eng", "profile": "dev"}, {"client": "ci-bot", "profile": "readonly"}]`)
	}
	cfg.Access = []Access{}
	for i := range arr.Elements {
		e := &arr.Elements[i]
		ep := index(p, i)
		obj, err := d.object(e, ep, `write an object such as {"group": "eng", "profile": "dev"}`)
		if err != nil {
			return err
		}
		var a Access
		who := 0
		err = d.fields(obj, ep, accessFields, func(f string, v *hujson.Value, fp string) error {
			s, err := d.str(v, fp)
			if err != nil {
				return err
			}
			if s == "" {
				return d.errAt(v, fp, "is empty", "write a name")
			}
			switch f {
			case "user":
				a.User, who = s, who+1
			case "group":
				a.Group, who = s, who+1
			case "client":
				a.Client, who = s, who+1
				refs.clients = append(refs.clients, named{s, fp, v})
			case "profile":
				a.Profile = s
				refs.profiles = append(refs.profiles, named{s, fp, v})
			}
			return nil
		})
		if err != nil {
			return err
		}
		if who != 1 || a.Profile == "" {
			return d.errAt(e, ep, `needs "profile" and exactly one of "user", "group" and "client"`,
				`write one entry per caller, such as {"group": "eng", "profile": "dev"}`)
		}
		cfg.Access = append(cfg.Access, a)
	}
	return nil
}

func (d *decoder) operators(v *hujson.Value, p string, cfg *Config) error {
	const example = `{"group": "security", "role": "reviewer"}`
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		return d.typeErr(v, p, "a list", "write a list such as ["+example+`, {"user": "alice", "role": "admin"}]`)
	}
	cfg.Operators = []Operator{}
	for i := range arr.Elements {
		e := &arr.Elements[i]
		ep := index(p, i)
		obj, err := d.object(e, ep, "write an object such as "+example)
		if err != nil {
			return err
		}
		var o Operator
		who := 0
		err = d.fields(obj, ep, operatorFields, func(f string, v *hujson.Value, fp string) error {
			s, err := d.str(v, fp)
			if err != nil {
				return err
			}
			switch {
			case s == "":
				return d.errAt(v, fp, "is empty", "write a name")
			case f == "user":
				o.User, who = s, who+1
			case f == "group":
				o.Group, who = s, who+1
			case Role(s) != RoleReviewer && Role(s) != RoleAdmin:
				return d.errAt(v, fp, strconv.Quote(s)+" is not a role", `write "reviewer" (approves and blocks) or "admin" (also clears latches, quarantines, edits servers)`)
			default:
				o.Role = Role(s)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if who != 1 || o.Role == "" {
			return d.errAt(e, ep, `needs "role" and exactly one of "user" and "group"`, "write one entry per person or group, such as "+example)
		}
		cfg.Operators = append(cfg.Operators, o)
	}
	return nil
}

// checkTeam checks that each profile and client named is defined.
func (d *decoder) checkTeam(cfg *Config, refs *teamRefs) error {
	for _, r := range refs.clients {
		if _, ok := cfg.Clients[r.name]; !ok {
			return d.errAt(r.v, r.path, "names no client "+strconv.Quote(r.name), `name a client defined in "clients", or remove the entry`)
		}
	}
	for _, r := range refs.profiles {
		if _, ok := cfg.Profiles[r.name]; ok || r.name == AllProfiles {
			continue
		}
		names := make([]string, 0, len(cfg.Profiles))
		for n := range cfg.Profiles {
			names = append(names, n)
		}
		slices.Sort(names)
		fix := `define it in "profiles", or write "*" for every approved tool`
		if len(names) > 0 {
			fix = "name one of " + strings.Join(names, ", ") + ` or "*", or define it in "profiles"`
		}
		return d.errAt(r.v, r.path, "names no profile "+strconv.Quote(r.name), fix)
	}
	return nil
}

// Auth is "auth": MCP callers may present an identity provider's access
// token, a JWT that package callers checks against the issuer's keys.
type Auth struct {
	Issuer   string // the OpenID issuer URL; its discovery document names its keys
	Audience string // the "aud" a token must hold: Warden's own, not another resource's
	// UserClaim and GroupsClaim name the claims that hold the caller's
	// user (default "sub") and groups (default "groups").
	UserClaim, GroupsClaim string
	// OperatorAudience is the "aud" of an operator's token for /v1
	// ("operatorAudience"; default <publicURL>/v1): another resource than
	// the MCP endpoints, so an agent's token for them never decides.
	OperatorAudience string
	// UIClient is the review page's client id at the identity provider (a
	// public client: authorization code with PKCE, redirect
	// <publicURL>/ui/callback); "" when people log in only with `warden ui`.
	UIClient string
}

var (
	authFields   = []string{"issuer", "audience", "operatorAudience", "claims", "uiClient"}
	claimsFields = []string{"user", "groups"}
)

// publicURL reads "publicURL": an absolute http(s) URL with no query,
// kept without a trailing "/" so paths can be joined to it.
func (d *decoder) publicURL(v *hujson.Value, p string, cfg *Config) error {
	s, err := d.str(v, p)
	if err != nil {
		return err
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return d.errAt(v, p, "is not an absolute http(s) URL", `write how clients reach Warden, such as "https://warden.example.com"`)
	}
	cfg.PublicURL = strings.TrimSuffix(s, "/")
	return nil
}

func (d *decoder) auth(v *hujson.Value, p string, cfg *Config) error {
	obj, err := d.object(v, p, `write an object such as {"issuer": "https://idp.example.com", "audience": "https://warden.example.com/mcp"}`)
	if err != nil {
		return err
	}
	a := Auth{UserClaim: "sub", GroupsClaim: "groups"}
	err = d.fields(obj, p, authFields, func(f string, v *hujson.Value, fp string) error {
		if f == "claims" {
			return d.claims(v, fp, &a)
		}
		s, err := d.str(v, fp)
		if err != nil {
			return err
		}
		switch f {
		case "issuer":
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
				return d.errAt(v, fp, "is not an issuer URL", `write the identity provider's issuer exactly as its tokens' "iss" holds it, such as "https://idp.example.com"`)
			}
			a.Issuer = s
		case "audience":
			if s == "" {
				return d.errAt(v, fp, "is empty", `write the audience the identity provider puts in "aud" of tokens for Warden, such as "https://warden.example.com/mcp"`)
			}
			a.Audience = s
		case "operatorAudience":
			if s == "" {
				return d.errAt(v, fp, "is empty", `write the audience the identity provider puts in "aud" of operators' tokens for Warden's API, or leave it out for "<publicURL>/v1"`)
			}
			a.OperatorAudience = s
		case "uiClient":
			if s == "" {
				return d.errAt(v, fp, "is empty", "write the client id the identity provider gave the review page, or leave it out")
			}
			a.UIClient = s
		}
		return nil
	})
	if err != nil {
		return err
	}
	if a.Issuer == "" || a.Audience == "" {
		return d.errAt(v, p, `needs both "issuer" and "audience"`,
			`write {"issuer": "<the identity provider's issuer URL>", "audience": "<the aud of tokens for Warden>"}; without "audience" a token minted for another resource would pass`)
	}
	cfg.Auth = &a
	return nil
}

func (d *decoder) claims(v *hujson.Value, p string, a *Auth) error {
	obj, err := d.object(v, p, `write an object such as {"user": "sub", "groups": "groups"}`)
	if err != nil {
		return err
	}
	return d.fields(obj, p, claimsFields, func(f string, v *hujson.Value, fp string) error {
		s, err := d.str(v, fp)
		if err != nil {
			return err
		}
		if s == "" {
			return d.errAt(v, fp, "is empty", "write the name of a claim of the identity provider's access tokens, or leave it out for the default")
		}
		if f == "user" {
			a.UserClaim = s
		} else {
			a.GroupsClaim = s
		}
		return nil
	})
}

// checkAuth checks what "auth" needs of the rest of the file, and what
// needs "auth".
func (d *decoder) checkAuth(cfg *Config, root *hujson.Object) error {
	if cfg.Operators != nil && cfg.Auth == nil {
		v := &root.Members[find(root, "operators")].Value
		return d.errAt(v, "operators", `needs "auth"`,
			`write "auth" with the identity provider operators log in with; without it only the local operator (the warden CLI, the api-token) can decide`)
	}
	if cfg.Auth != nil && cfg.PublicURL != "" && cfg.Auth.OperatorAudience == "" {
		cfg.Auth.OperatorAudience = cfg.PublicURL + "/v1"
	}
	if cfg.Auth != nil && cfg.Auth.OperatorAudience == cfg.Auth.Audience {
		v := &root.Members[find(root, "auth")].Value
		return d.errAt(v, "auth", `gives operators' tokens the audience of the MCP endpoints`,
			`give "operatorAudience" an audience of its own (default "<publicURL>/v1"): else an agent's token for the MCP endpoints could approve, block and clear`)
	}
	if cfg.Auth == nil || cfg.PublicURL != "" {
		return nil
	}
	v := &root.Members[find(root, "auth")].Value
	return d.errAt(v, "auth", `needs "publicURL"`,
		`write "publicURL": how clients reach Warden, such as "https://warden.example.com"; a client refused a token is pointed at <publicURL>/.well-known/oauth-protected-resource`)
}
