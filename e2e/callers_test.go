package e2e

// End-to-end test of known callers: two clients, each known by its bearer
// token, see and call what their profiles allow through /mcp, /mcp/{server},
// the search view and warden stdio, and activity records which one called.

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// reachable is a Warden the tests reach: in process or `warden serve`.
type reachable interface{ URL(path string) string }

// kcConnect opens a session on path of w sending token, with session
// options sopts (nil: the 2026-07-28 revision, without a session).
func kcConnect(t *testing.T, w reachable, token, path string, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "kc-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.URL(path), HTTPClient: &http.Client{Transport: testenv.Bearer(token)}}, sopts)
	if err != nil {
		t.Fatalf("connect %s: %v", path, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// kcProfiles are the profiles of the known callers' tests: readonly (the
// read tools) and dev (fx's write_* and echo).
var kcProfiles = map[string]any{
	"readonly": map[string]any{"classes": []string{"read"}},
	"dev":      map[string]any{"servers": map[string]any{"fx": map[string]any{"tools": []string{"write_*", "echo"}}}},
}

// kcStart starts warden serve with config cfg, in a temporary dir, its
// log shown if the test fails, once servers are ready.
func kcStart(t *testing.T, cfg map[string]any, servers ...string) *wardentest.Warden {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w := wardentest.StartWith(t, cfgPath, filepath.Join(dir, "state"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	})
	for _, s := range servers {
		w.WaitReady(t, s)
	}
	return w
}

// kcList posts a tools/list to w's /mcp with token ("": none), and
// answers the status and WWW-Authenticate.
func kcList(t *testing.T, w reachable, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, w.URL("/mcp"), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// kcStdio runs warden stdio for the Warden of configPath and stateDir,
// sending token (named by --token-env).
func kcStdio(t *testing.T, configPath, stateDir, token string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(testenv.BuildBinary(t, "./cmd/warden"), "stdio", "--config", configPath, "--state-dir", stateDir, "--token-env", "KC_TOKEN")
	cmd.Env = append(os.Environ(), "KC_TOKEN="+token)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, wardentest.Session2025)
	if err != nil {
		t.Fatalf("warden stdio --token-env: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestKnownCallers(t *testing.T) {
	fx, other := fixture.NewServer(fixture.Options{}), fixture.NewServer(fixture.Options{})
	w := kcStart(t, map[string]any{
		"mcpServers": map[string]any{
			"fx":    map[string]any{"url": fx.Serve(t), "trusted": true},
			"other": map[string]any{"url": other.Serve(t), "trusted": true},
		},
		"clients": map[string]any{
			"ci-bot": map[string]any{"tokenSha256": testenv.TokenSHA256("ci-token"), "profile": "readonly"},
			"agent":  map[string]any{"tokenSha256": testenv.TokenSHA256("dev-token"), "profile": "dev"},
		},
		"profiles": kcProfiles,
	}, "fx", "other")

	// Without a token, or with one Warden does not know: 401, saying why.
	for token, want := range map[string]string{"": "no bearer token", "nope": "not one Warden knows"} {
		if code, ch := kcList(t, w, token); code != http.StatusUnauthorized || !strings.Contains(ch, want) {
			t.Errorf("token %q: %d %q", token, code, ch)
		}
	}
	if strings.Contains(w.Logs.String(), "nope") || strings.Contains(w.Logs.String(), "ci-token") {
		t.Error("a token is in the daemon's log")
	}

	for _, era := range []*mcp.ClientSessionOptions{wardentest.Session2025, nil} {
		ci, dev := kcConnect(t, w, "ci-token", "/mcp", era), kcConnect(t, w, "dev-token", "/mcp", era)
		wardentest.WaitFor(t, 20*time.Second, "each caller's list", func() bool {
			return slices.Equal(wardentest.SortedToolNames(t, ci), []string{"fx__echo", "fx__read_value", "other__echo", "other__read_value"}) &&
				slices.Equal(wardentest.SortedToolNames(t, dev), []string{"fx__echo", "fx__write_value"})
		})
		wardentest.WantRefusal(t, wardentest.CallResult(t, ci, "fx__write_value", map[string]any{"value": "x"}), "NOT_PERMITTED",
			`client "ci-bot"`, "profile readonly", `"profiles" or "access"`)
		if got := wardentest.CallText(t, dev, "fx__write_value", map[string]any{"value": "y"}); fx.Value("") != "y" {
			t.Errorf("dev's write: %q", got)
		}
		wardentest.WantRefusal(t, wardentest.CallResult(t, dev, "other__echo", map[string]any{}), "NOT_PERMITTED", "profile dev")

		// /mcp/{server}: names unchanged, the same limits.
		ciOther, devOther := kcConnect(t, w, "ci-token", "/mcp/other", era), kcConnect(t, w, "dev-token", "/mcp/other", era)
		if got := wardentest.SortedToolNames(t, ciOther); !slices.Equal(got, []string{"echo", "read_value"}) {
			t.Errorf("ci-bot on /mcp/other sees %v", got)
		}
		if got := wardentest.SortedToolNames(t, devOther); len(got) != 0 {
			t.Errorf("agent on /mcp/other sees %v", got)
		}
		wardentest.WantRefusal(t, wardentest.CallResult(t, devOther, "echo", map[string]any{}), "NOT_PERMITTED")
		wardentest.WantRefusal(t, wardentest.CallResult(t, ciOther, fixture.ToolDelete, map[string]any{}), "NOT_PERMITTED")

		// The search view finds only what each may call.
		ciSearch, devSearch := kcConnect(t, w, "ci-token", "/mcp?view=search", era), kcConnect(t, w, "dev-token", "/mcp?view=search", era)
		if got := stSearch(t, devSearch, "value key store read echo"); !slices.Equal(sorted(got), []string{"fx__echo", "fx__write_value"}) {
			t.Errorf("agent finds %v", got)
		}
		if got := stSearch(t, ciSearch, "store a value"); slices.Contains(got, "fx__write_value") {
			t.Errorf("ci-bot finds %v", got)
		}
		wardentest.WantRefusal(t, wardentest.CallResult(t, ciSearch, "call_tool", map[string]any{"name": "fx__write_value", "arguments": map[string]any{"value": "z"}}), "NOT_PERMITTED")
	}

	// warden stdio sends the token named by --token-env.
	cs := kcStdio(t, w.ConfigPath, w.StateDir, "ci-token")
	if got := wardentest.SortedToolNames(t, cs); !slices.Equal(got, []string{"fx__echo", "fx__read_value", "other__echo", "other__read_value"}) {
		t.Errorf("ci-bot through warden stdio sees %v", got)
	}
	wardentest.WantRefusal(t, wardentest.CallResult(t, cs, "fx__write_value", map[string]any{"value": "x"}), "NOT_PERMITTED")

	// Activity records who called; --user picks one caller's calls. (The
	// log is written off the call's path: the last call's entry may come
	// a moment later.)
	var entries []activity.Entry
	stdioRefusal := func(e activity.Entry) bool { return e.Surface == "stdio:mcp" && e.Code == "NOT_PERMITTED" }
	wardentest.WaitFor(t, 10*time.Second, "ci-bot's refused call through warden stdio recorded", func() bool {
		code, out, stderr := w.CLI(t, "activity", "--user", "ci-bot", "--json")
		entries = nil
		if code != 0 || json.Unmarshal([]byte(out), &entries) != nil {
			t.Fatalf("warden activity --user ci-bot: exit %d\n%s\n%s", code, out, stderr)
		}
		return slices.ContainsFunc(entries, stdioRefusal)
	})
	for _, e := range entries {
		if e.User != "ci-bot" {
			t.Errorf("an entry of another caller: %+v", e)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
