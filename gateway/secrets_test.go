package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// awsKey is a made-up AWS access key id (written in two parts so that no
// scanner mistakes this file for a leak).
var awsKey = "AKIA" + "Q7ZL3V5XNRB2TW6Y"

// A call whose arguments carry a credential is refused ARGUMENTS_BLOCKED,
// naming where and which format but never the value, and nothing reaches
// the upstream; a server whose config allows secrets gets the call.
func TestCallArgumentsBlocked(t *testing.T) {
	fx, open := fixture.NewServer(fixture.Options{}), fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{
		"fx": {"url": %q, "trusted": true},
		"open": {"url": %q, "trusted": true, "guardrails": {"secrets": "allow"}}
	}`, fx.Serve(t), open.Serve(t)))
	p.WaitListed(t, "fx")
	p.WaitListed(t, "open")

	args := `{"note": "deploy", "cloud": {"keys": ["x", "` + awsKey + `"]}}`
	expectRefusal(t, p, "fx", fixture.ToolEcho, args, nil, gateway.CodeArgumentsBlocked,
		"cloud.keys[1] (aws-access-token)", `"guardrails": {"secrets": "allow"}`, "nothing was sent")
	res, _ := call(t, p, "fx", fixture.ToolEcho, args, nil)
	if strings.Contains(text(res), awsKey) || strings.Contains(text(res), awsKey[4:]) {
		t.Errorf("the refusal shows the value: %q", text(res))
	}
	if n := fx.Calls(fixture.ToolEcho); n != 0 {
		t.Errorf("a blocked call reached the upstream %d times", n)
	}
	e := lastActivity(t, p, "fx")
	if e.Outcome != "refused" || e.Code != string(gateway.CodeArgumentsBlocked) ||
		!strings.Contains(e.Error, "cloud.keys[1] (aws-access-token)") || strings.Contains(e.Error, awsKey[4:]) {
		t.Errorf("activity of a blocked call %+v", e)
	}

	// A write is refused before it is written down or latched.
	expectRefusal(t, p, "fx", fixture.ToolWrite, `{"key": "k", "value": "`+awsKey+`"}`, nil, gateway.CodeArgumentsBlocked, "value (aws-access-token)")
	if fx.WriteDispatches() != 0 || len(p.Writes.List()) != 0 {
		t.Errorf("a blocked write was sent (%d) or latched (%+v)", fx.WriteDispatches(), p.Writes.List())
	}

	// A call made a task is refused before its task is created.
	started := false
	task, err := p.Gateway.CallTool(testCtx(t), gateway.Call{Server: "fx", Tool: fixture.ToolEcho, Args: []byte(args), Surface: "mcp",
		Start: func(context.Context) error { started = true; return nil }})
	if err != nil || refusalCode(decoded(t, task)) != string(gateway.CodeArgumentsBlocked) || started {
		t.Errorf("a blocked task call: %+v (%v), task created %v", task, err, started)
	}

	// Allowed by its config: sent as it is.
	allowed, err := call(t, p, "open", fixture.ToolEcho, args, nil)
	if err != nil || allowed.IsError || !strings.Contains(text(allowed), awsKey) || open.Calls(fixture.ToolEcho) != 1 {
		t.Errorf("allowed server: %q (%v), %d calls", text(allowed), err, open.Calls(fixture.ToolEcho))
	}
}

// What an upstream's error says is kept in the activity entry with its
// credentials masked; the client gets the answer as it is.
func TestActivityMasksErrors(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	p := start(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)))
	p.WaitListed(t, "fx")
	fx.SetValue("k", "key="+awsKey)

	res, err := call(t, p, "fx", fixture.ToolWrite, `{"key": "k", "value": "v", "fail": true}`, nil)
	if err != nil || !res.IsError || !strings.Contains(text(res), awsKey) {
		t.Fatalf("the failing write: %q (%v)", text(res), err)
	}
	e := lastActivity(t, p, "fx")
	if e.Outcome != "error" || strings.Contains(e.Error, awsKey[4:]) ||
		!strings.Contains(e.Error, `write_value failed as asked; the value of "k" stays "key=[REDACTED:aws-access-token]"`) {
		t.Errorf("activity of the failed write: %+v", e)
	}
}

// BenchmarkCallSecretsCheck is a typical read call through the gateway to
// the fixture over HTTP, to a server that checks arguments for secrets (the
// default) and to one whose config allows them (no check), one after the
// other in one run; guardrails' BenchmarkArgumentsCheck is the check alone.
func BenchmarkCallSecretsCheck(b *testing.B) {
	url := fixture.NewServer(fixture.Options{}).Serve(b)
	p := parts.New(b, slog.New(slog.DiscardHandler))
	p.Start(b, fmt.Sprintf(`{"check": {"url": %q, "trusted": true}, "nocheck": {"url": %q, "trusted": true, "guardrails": {"secrets": "allow"}}}`, url, url))
	p.WaitListed(b, "check")
	p.WaitListed(b, "nocheck")
	args := []byte(`{"path": "/home/user/project/README.md", "query": "how do I rotate the api key for the staging token?", "limit": 10, "sha": "da39a3ee5e6b4b0d3255bfef95601890afd80709"}`)
	for _, server := range []string{"nocheck", "check"} {
		b.Run(server, func(b *testing.B) {
			for b.Loop() {
				res, err := p.Gateway.CallTool(b.Context(), gateway.Call{Server: server, Tool: fixture.ToolEcho, Args: args, Surface: "mcp"})
				if err != nil || res.IsError {
					b.Fatal(res, err)
				}
			}
		})
	}
}
