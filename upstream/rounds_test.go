package upstream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askingPeer answers each question with its key, or refuses it.
type askingPeer struct {
	Peer   // the rest is not called
	refuse error
}

func (p askingPeer) Ask(_ context.Context, server, key string, q mcp.InputRequest) (mcp.InputResponse, error) {
	if p.refuse != nil {
		return nil, p.refuse
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"key": key, "server": server}}, nil
}

// An asker answers a round's questions together, each through the Peer;
// a round with no questions, one past maxRounds, or one whose questions
// went unanswered ends the call with an error that says so, and a
// client's own refusal is passed on as it came.
func TestAskerRounds(t *testing.T) {
	ctx := context.Background()
	asks := mcp.InputRequestMap{"a": &mcp.ElicitParams{Message: "?"}, "b": &mcp.ElicitParams{Message: "?"}}
	a := &asker{name: "s", peer: askingPeer{}}
	answers, err := a.answerRound(ctx, "tools/call", 1, asks)
	if err != nil || len(answers) != 2 || answers["b"].(*mcp.ElicitResult).Content["key"] != "b" {
		t.Fatalf("answers %+v (%v)", answers, err)
	}
	for _, c := range []struct {
		name  string
		a     *asker
		round int
		asks  mcp.InputRequestMap
		want  string
	}{
		{"no questions", a, 1, nil, "busy"},
		{"too many rounds", a, maxRounds, asks, "after 10 rounds"},
		{"unanswered", &asker{name: "s", peer: askingPeer{refuse: errors.New("gone")}}, 1, asks, "did not come"},
		{"refused", &asker{name: "s", peer: askingPeer{refuse: &jsonrpc.Error{Code: -32021, Message: "no sampling"}}}, 1, asks, "no sampling"},
	} {
		_, err := c.a.answerRound(ctx, "tools/call", c.round, c.asks)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
