package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// An agent's SDK client that puts an AWS key in a call's arguments is
// refused ARGUMENTS_BLOCKED in both eras, on /mcp and /mcp/{server}; the
// fixture never sees the call, and the activity log records the refusal,
// naming the parameter, without the value. A server's error that carries a
// credential reaches the client as it is, and is masked in the activity
// log (GET /v1/activity and warden activity).
func TestSecretsKeptOutOfCalls(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": up.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")
	awsKey := "AKIA" + "Q7ZL3V5XNRB2TW6Y" // made up; in two parts so no scanner takes this file for a leak
	ghToken := "ghp_" + "Zq8rT2mXv9LkP4sWb7NcY3hJd6FgA1eKu5Ro"

	for _, c := range []struct{ path, tool, version string }{
		{"/mcp", "s__echo", "2025-11-25"},
		{"/mcp/s", "echo", "2026-07-28"},
	} {
		cs := w.ConnectWith(t, c.path, nil, &mcp.ClientSessionOptions{ProtocolVersion: c.version})
		res := wardentest.CallResult(t, cs, c.tool, map[string]any{"region": "eu-west-1", "aws": map[string]any{"access_key_id": awsKey}})
		wardentest.WantRefusal(t, res, "ARGUMENTS_BLOCKED", "aws.access_key_id (aws-access-token)", `"guardrails": {"secrets": "allow"}`)
		if text := wardentest.ResultText(res); strings.Contains(text, awsKey[4:]) {
			t.Errorf("%s %s: the refusal shows the key: %q", c.path, c.version, text)
		}
	}
	if n := up.Calls(fixture.ToolEcho); n != 0 {
		t.Fatalf("blocked calls reached the fixture %d times", n)
	}

	// The server's own error quotes a token it holds.
	up.SetValue("k", "token="+ghToken)
	cs := w.Connect(t, "/mcp/s", nil)
	res := wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v", "fail": true})
	if !res.IsError || !strings.Contains(wardentest.ResultText(res), ghToken) {
		t.Fatalf("the failing write: %q", wardentest.ResultText(res))
	}

	type entry struct{ Surface, Tool, Outcome, Code, Error string }
	var entries []entry
	var raw json.RawMessage
	wardentest.WaitFor(t, 10*time.Second, "three calls in the activity log", func() bool {
		if code := w.API(t, "GET", "/v1/activity?server=s", nil, &raw); code != http.StatusOK {
			t.Fatalf("GET /v1/activity: status %d", code)
		}
		return json.Unmarshal(raw, &entries) == nil && len(entries) >= 3
	})
	if strings.Contains(string(raw), awsKey[4:]) || strings.Contains(string(raw), ghToken[4:]) {
		t.Fatalf("the activity log holds a credential:\n%s", raw)
	}
	failed, blocked := entries[0], entries[1] // newest first
	if failed.Tool != fixture.ToolWrite || failed.Outcome != "error" || !strings.Contains(failed.Error, "token=[REDACTED:github-pat]") {
		t.Errorf("the failed write's entry %+v; want its error masked", failed)
	}
	if blocked.Surface != "mcp/s" || blocked.Outcome != "refused" || blocked.Code != "ARGUMENTS_BLOCKED" ||
		!strings.Contains(blocked.Error, "aws.access_key_id (aws-access-token)") {
		t.Errorf("the blocked call's entry %+v", blocked)
	}
	for _, args := range [][]string{{"activity"}, {"activity", "--json"}} {
		code, out, stderr := w.CLI(t, args...)
		if code != 0 || !strings.Contains(out, "ARGUMENTS_BLOCKED") || !strings.Contains(out, "[REDACTED:github-pat]") ||
			strings.Contains(out, awsKey[4:]) || strings.Contains(out, ghToken[4:]) {
			t.Errorf("warden %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
}
