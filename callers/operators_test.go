package callers

import (
	"context"
	"errors"
	"testing"

	"github.com/wardenmcp/warden/config"
)

func TestOperatorRoles(t *testing.T) {
	cfg := &config.Config{PublicURL: "https://w.example",
		Auth:    &config.Auth{Issuer: "https://idp.example", Audience: "w", UserClaim: "sub", GroupsClaim: "groups"},
		Clients: map[string]config.Client{"bot": {Name: "bot", Profile: config.AllProfiles}},
		Operators: []config.Operator{{Group: "security", Role: config.RoleReviewer}, {User: "alice", Role: config.RoleAdmin},
			{Group: "eng", Role: config.RoleReviewer}}}
	p := New(cfg)
	for _, tc := range []struct {
		id   Identity
		want config.Role // "": not an operator
	}{
		{Identity{User: "bob", Groups: []string{"security"}}, config.RoleReviewer},
		{Identity{User: "alice"}, config.RoleAdmin},
		{Identity{User: "alice", Groups: []string{"eng"}}, config.RoleAdmin}, // the highest role wins, in any order
		{Identity{User: "carol", Groups: []string{"eng", "sales"}}, config.RoleReviewer},
		{Identity{User: "dave", Groups: []string{"sales"}}, ""},
		{Identity{Client: "bot"}, ""}, // agents never decide
		{Identity{User: "security"}, ""},
	} {
		op, err := p.Operator(tc.id)
		switch {
		case tc.want == "" && !errors.Is(err, ErrNotOperator):
			t.Errorf("%+v: %v, %v; want ErrNotOperator", tc.id, op, err)
		case tc.want != "" && (err != nil || op.Role != tc.want || op.Name != tc.id.User):
			t.Errorf("%+v: %v, %v; want %s", tc.id, op, err, tc.want)
		}
	}
	if _, err := (*Policy)(nil).OperatorToken(context.Background(), "x"); !errors.Is(err, ErrUnknownToken) {
		t.Errorf("no policy: %v", err)
	}
	reviewer := Operator{Name: "bob", Role: config.RoleReviewer}
	if !reviewer.May(config.RoleReviewer) || reviewer.May(config.RoleAdmin) || !Local.May(config.RoleReviewer) || !Local.May(config.RoleAdmin) {
		t.Error("May: a reviewer may review only; an admin may do both")
	}
}
