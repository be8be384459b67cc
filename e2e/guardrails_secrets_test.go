package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// An agent's SDK client that puts an AWS key in a call's arguments is
// refused ARGUMENTS_BLOCKED in both eras, on /mcp and /mcp/{server}, by
// the search view's call_tool and through warden stdio; the
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

	secret := map[string]any{"region": "eu-west-1", "aws": map[string]any{"access_key_id": awsKey}}
	stdio := func() *mcp.ClientSession {
		cmd := exec.Command(testenv.BuildBinary(t, "./cmd/warden"), "stdio", "--server", "s", "--config", w.ConfigPath, "--state-dir", w.StateDir)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	for _, c := range []struct {
		name    string
		connect func() *mcp.ClientSession
		tool    string
		args    any
	}{
		{"/mcp 2025-11-25", func() *mcp.ClientSession {
			return w.ConnectWith(t, "/mcp", nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		}, "s__echo", secret},
		{"/mcp/s 2026-07-28", func() *mcp.ClientSession {
			return w.ConnectWith(t, "/mcp/s", nil, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		}, "echo", secret},
		{"the search view's call_tool", func() *mcp.ClientSession { return w.Connect(t, "/mcp?view=search", nil) },
			"call_tool", map[string]any{"name": "s__echo", "arguments": secret}},
		{"warden stdio", stdio, "echo", secret},
	} {
		res := wardentest.CallResult(t, c.connect(), c.tool, c.args)
		wardentest.WantRefusal(t, res, "ARGUMENTS_BLOCKED", "aws.access_key_id (aws-access-token)", `"guardrails": {"secrets": "allow"}`)
		if text := wardentest.ResultText(res); strings.Contains(text, awsKey[4:]) {
			t.Errorf("%s: the refusal shows the key: %q", c.name, text)
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
	wardentest.WaitFor(t, 10*time.Second, "five calls in the activity log", func() bool {
		if code := w.API(t, "GET", "/v1/activity?server=s", nil, &raw); code != http.StatusOK {
			t.Fatalf("GET /v1/activity: status %d", code)
		}
		return json.Unmarshal(raw, &entries) == nil && len(entries) >= 5
	})
	if strings.Contains(string(raw), awsKey[4:]) || strings.Contains(string(raw), ghToken[4:]) {
		t.Fatalf("the activity log holds a credential:\n%s", raw)
	}
	failed, blocked := entries[0], entries[1] // newest first
	if failed.Tool != fixture.ToolWrite || failed.Outcome != "error" || !strings.Contains(failed.Error, "token=[REDACTED:github-pat]") {
		t.Errorf("the failed write's entry %+v; want its error masked", failed)
	}
	if blocked.Outcome != "refused" || blocked.Code != "ARGUMENTS_BLOCKED" || !strings.Contains(blocked.Error, "aws.access_key_id (aws-access-token)") {
		t.Errorf("the blocked call's entry %+v", blocked)
	}
	var surfaces []string
	for _, e := range entries[1:] {
		if e.Code == "ARGUMENTS_BLOCKED" {
			surfaces = append(surfaces, e.Surface)
		}
	}
	if got := strings.Join(surfaces, " "); got != "stdio:mcp/s mcp?view=search mcp/s mcp" {
		t.Errorf("blocked calls recorded from %q", got)
	}
	for _, args := range [][]string{{"activity"}, {"activity", "--json"}} {
		code, out, stderr := w.CLI(t, args...)
		if code != 0 || !strings.Contains(out, "ARGUMENTS_BLOCKED") || !strings.Contains(out, "[REDACTED:github-pat]") ||
			strings.Contains(out, awsKey[4:]) || strings.Contains(out, ghToken[4:]) {
			t.Errorf("warden %s: exit %d\n%s%s", strings.Join(args, " "), code, out, stderr)
		}
	}
}
