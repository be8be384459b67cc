package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
)

// A call outside its caller's profiles is refused NOT_PERMITTED, before
// anything else is said of the tool, and recorded with who made it; one
// inside runs. A call without a profile (the operator's) is not limited.
func TestCallOutsideProfile(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)))
	p.WaitListed(t, "fx")
	cfg, err := config.Parse("", []byte(`{
		"clients": {"bot": {"tokenSha256": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "profile": "readonly"}},
		"profiles": {"readonly": {"classes": ["read"]}}
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	pol := callers.New(cfg)
	bot := callers.Caller{Identity: callers.Identity{Client: "bot"}}
	bot.Profile = pol.Profile(bot.Identity)

	run := func(tool, args string, who callers.Caller) *gateway.Call {
		c := &gateway.Call{Server: "fx", Tool: tool, Args: []byte(args), Surface: "mcp", Who: who}
		res, err := p.Gateway.CallTool(testCtx(t), *c)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		r := decoded(t, res)
		if who.Profile != nil && tool != fixture.ToolRead {
			if refusalCode(r) != string(gateway.CodeNotPermitted) {
				t.Fatalf("%s by bot: %q, want NOT_PERMITTED", tool, text(r))
			}
			for _, w := range []string{`client "bot"`, "profile readonly", `"profiles" or "access"`} {
				if !strings.Contains(text(r), w) {
					t.Errorf("refusal %q does not say %q", text(r), w)
				}
			}
		} else if r.IsError {
			t.Fatalf("%s: %q", tool, text(r))
		}
		return c
	}
	run(fixture.ToolWrite, `{"key":"k","value":"v"}`, bot)
	if fx.WriteDispatches() != 0 {
		t.Fatal("a refused write reached the upstream")
	}
	if e := lastActivity(t, p, "fx"); e.Outcome != "refused" || e.Code != "NOT_PERMITTED" || e.User != "bot" {
		t.Errorf("activity %+v", e)
	}
	run("no_such_tool", `{}`, bot) // not known: no class, so outside a class-limited profile
	run(fixture.ToolRead, `{"key":"k"}`, bot)
	run(fixture.ToolWrite, `{"key":"k","value":"v"}`, callers.Caller{})
	p.Activity.Flush()
	if es, _ := p.Activity.Query(activity.Filter{User: "bot"}, 0); len(es) != 3 {
		t.Errorf("bot's calls: %+v", es)
	}
}
