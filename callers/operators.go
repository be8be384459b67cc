package callers

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/wardenmcp/warden/config"
)

// Operator is a person who decides, as records name them, and what they
// may decide (config "operators").
type Operator struct {
	Name string // the identity provider's user; Local.Name for the local operator
	Role config.Role
}

// Local is the local operator: the warden CLI on the state dir's socket,
// a holder of the api-token, a browser that came in with `warden ui`.
var Local = Operator{Name: "local", Role: config.RoleAdmin}

// May reports whether o may do what needs role.
func (o Operator) May(role config.Role) bool {
	return o.Role == config.RoleAdmin || o.Role == role
}

// String names the operator for a person: `operator "alice" (reviewer)`.
func (o Operator) String() string {
	return "operator " + strconv.Quote(o.Name) + " (" + string(o.Role) + ")"
}

// ErrNotOperator: the token is valid but "operators" names neither its
// user nor any of its groups.
var ErrNotOperator = errors.New(`the identity provider's token is valid, but "operators" in Warden's config names neither its user nor any of its groups; an admin adds an entry such as {"user": "<name>", "role": "reviewer"}`)

// Operator is the operator id is: the highest role any entry of
// "operators" gives its user or one of its groups. A client of "clients"
// (an agent) is never an operator.
func (p *Policy) Operator(id Identity) (Operator, error) {
	if p == nil || id.User == "" {
		return Operator{}, ErrNotOperator
	}
	op := Operator{Name: id.User}
	for _, e := range p.operators {
		if e.User == id.User || (e.Group != "" && slices.Contains(id.Groups, e.Group)) {
			if op.Role != config.RoleAdmin {
				op.Role = e.Role
			}
		}
	}
	if op.Role == "" {
		return Operator{}, ErrNotOperator
	}
	return op, nil
}

// OperatorToken is the operator whose identity provider's access token
// for Warden's API (auth.OperatorAudience) token is; ErrUnknownToken
// without operators. A client's token is not asked for, nor one for the MCP
// endpoints: agents never decide.
func (p *Policy) OperatorToken(ctx context.Context, token string) (Operator, error) {
	if p == nil || p.operator == nil {
		return Operator{}, ErrUnknownToken
	}
	id, err := p.operator.Verify(ctx, token)
	if err != nil {
		return Operator{}, err
	}
	return p.Operator(id)
}
