package callers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/writes"
)

func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func policy(t testing.TB) *Policy {
	t.Helper()
	cfg, err := config.Parse("", []byte(`{
		"clients": {
			"bot": {"tokenSha256": "`+hashOf("bot-token")+`", "profile": "readonly"},
			"dev": {"tokenSha256": "`+hashOf("dev-token")+`", "profile": "dev"},
			"root": {"tokenSha256": "`+hashOf("root-token")+`", "profile": "*"},
			"both": {"tokenSha256": "`+hashOf("both-token")+`", "profile": "dev"},
			"none": {"tokenSha256": "`+hashOf("none-token")+`", "profile": "empty"}
		},
		"profiles": {
			"readonly": {"classes": ["read"]},
			"dev": {"servers": {"github": {"tools": ["search_*", "create_issue"]}, "memory": {}}},
			"devread": {"servers": {"github": {}}, "classes": ["read"]},
			"empty": {"servers": {}}
		},
		"access": [{"client": "both", "profile": "readonly"}, {"group": "eng", "profile": "devread"}, {"user": "alice", "profile": "*"}]
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg)
}

func TestNoClientsNoPolicy(t *testing.T) {
	if p := New(&config.Config{}); p != nil {
		t.Fatal("a config without clients has a policy")
	}
	var none *Profile
	if !none.Allows("s", "t", writes.ClassDestructive) {
		t.Error("a nil profile limits")
	}
}

func TestAuthenticate(t *testing.T) {
	p := policy(t)
	for _, tc := range []struct {
		header, url string
		client      string // "" : refused, saying want
		want        string
	}{
		{header: "Bearer bot-token", client: "bot"},
		{header: "bearer  dev-token ", client: "dev"},
		{header: "", want: "no bearer token"},
		{header: "Basic Ym90OnRva2Vu", want: "is not a bearer token"},
		{header: "Bearer ", want: "is not a bearer token"},
		{header: "Bearer nope", want: "not one Warden knows"},
		{header: "Bearer " + strings.Repeat("x", maxToken+1), want: "longer than 4096 bytes"},
		{header: "Bearer bot-token", url: "/mcp?access_token=bot-token", want: "token in the URL is refused"},
	} {
		url := tc.url
		if url == "" {
			url = "/mcp"
		}
		r := httptest.NewRequest("POST", url, nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		c, err := p.Authenticate(r)
		if tc.client != "" {
			if err != nil || c.Client != tc.client || c.Profile == nil {
				t.Errorf("%q: %+v, %v", tc.header, c, err)
			}
			continue
		}
		var ref *Refused
		if !errors.As(err, &ref) || !strings.Contains(ref.Description, tc.want) {
			t.Errorf("%q: %v, want a refusal saying %q", tc.header, err, tc.want)
			continue
		}
		want := `Bearer error="invalid_token", error_description="`
		if tc.header == "" {
			want = `Bearer error_description="` // no credentials: no error code (RFC 6750)
		}
		if strings.Contains(ref.Challenge(), "bot-token") || !strings.HasPrefix(ref.Challenge(), want) {
			t.Errorf("challenge: %s", ref.Challenge())
		}
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Add("Authorization", "Bearer bot-token")
	r.Header.Add("Authorization", "Bearer dev-token")
	if _, err := p.Authenticate(r); err == nil {
		t.Error("two Authorization headers accepted")
	}
}

// A verifier beside the clients' tokens (an identity provider's) is asked
// about a token they do not know, and its refusal is the request's.
type fakeVerifier struct{}

func (fakeVerifier) Verify(_ context.Context, token string) (Identity, error) {
	switch token {
	case "jwt-alice":
		return Identity{User: "alice", Groups: []string{"eng"}}, nil
	case "jwt-expired":
		return Identity{}, errors.New("the token expired")
	}
	return Identity{}, ErrUnknownToken
}

func TestVerifierSeam(t *testing.T) {
	p := policy(t)
	p.verifiers = append(p.verifiers, fakeVerifier{})
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.Header.Set("Authorization", "Bearer jwt-alice")
	c, err := p.Authenticate(r)
	if err != nil || c.Name() != "alice" || c.Profile.String() != "profiles devread, *" {
		t.Fatalf("%+v %v", c, err)
	}
	r.Header.Set("Authorization", "Bearer jwt-expired")
	if _, err := p.Authenticate(r); err == nil || err.Error() != "the token expired" {
		t.Errorf("expired: %v", err)
	}
}

func TestProfiles(t *testing.T) {
	p := policy(t)
	type call struct {
		server, tool string
		class        writes.Class
	}
	var (
		search  = call{"github", "search_code", writes.ClassRead}
		create  = call{"github", "create_issue", writes.ClassWrite}
		del     = call{"github", "delete_repo", writes.ClassDestructive}
		memory  = call{"memory", "write_note", writes.ClassWrite}
		fsRead  = call{"fs", "read_file", writes.ClassRead}
		unknown = call{"fs", "ghost", ""}
	)
	for _, tc := range []struct {
		id      Identity
		names   string
		allowed []call
		refused []call
	}{
		{Identity{Client: "bot"}, "profile readonly", []call{search, fsRead}, []call{create, del, memory, unknown}},
		{Identity{Client: "dev"}, "profile dev", []call{search, create, memory}, []call{del, fsRead, unknown}},
		{Identity{Client: "both"}, "profiles dev, readonly", []call{search, create, memory, fsRead}, []call{del, unknown}},
		{Identity{Client: "root"}, "profile *", []call{search, create, del, memory, fsRead, unknown}, nil},
		{Identity{Client: "none"}, "profile empty", nil, []call{search, fsRead}},
		{Identity{User: "bob", Groups: []string{"eng"}}, "profile devread", []call{search}, []call{create, fsRead}},
		{Identity{User: "carol"}, "no profile", nil, []call{search, fsRead, unknown}},
	} {
		pr := p.Profile(tc.id)
		for _, c := range tc.allowed {
			if !pr.AllowsServer(c.server) {
				t.Errorf("%+v: server %s refused, but its tool %s allowed", tc.id, c.server, c.tool)
			}
		}
		if pr.String() != tc.names {
			t.Errorf("%+v: %s, want %s", tc.id, pr, tc.names)
		}
		for _, c := range tc.allowed {
			if !pr.Allows(c.server, c.tool, c.class) {
				t.Errorf("%+v: %v refused", tc.id, c)
			}
		}
		for _, c := range tc.refused {
			if pr.Allows(c.server, c.tool, c.class) {
				t.Errorf("%+v: %v allowed", tc.id, c)
			}
		}
	}
}

// A server is allowed when some profile names it or limits by class only.
func TestAllowsServer(t *testing.T) {
	p := policy(t)
	for _, tc := range []struct {
		id   Identity
		want string // the servers of "github memory fs" allowed
	}{
		{Identity{Client: "bot"}, "github memory fs"},
		{Identity{Client: "dev"}, "github memory"},
		{Identity{User: "bob", Groups: []string{"eng"}}, "github"},
		{Identity{Client: "none"}, ""},
		{Identity{User: "carol"}, ""},
	} {
		var got []string
		for _, s := range []string{"github", "memory", "fs"} {
			if p.Profile(tc.id).AllowsServer(s) {
				got = append(got, s)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%+v: %v, want %s", tc.id, got, tc.want)
		}
	}
	var none *Profile
	if !none.AllowsServer("x") {
		t.Error("a nil profile limits")
	}
}

func TestPolicyEqual(t *testing.T) {
	a, b := policy(t), policy(t)
	var none *Policy
	if !a.Equal(b) || !none.Equal(nil) || a.Equal(nil) || none.Equal(a) {
		t.Error("Equal of the same configs, or of none")
	}
	b.access = b.access[1:]
	if a.Equal(b) {
		t.Error("Equal with an access entry less")
	}
}
