package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// logsBroken is a stdio server that works with MODE=ok and otherwise fails
// to start the way npx does for a mistyped package, echoing a secret from
// its environment on the way.
const logsBroken = `if [ "$MODE" != ok ]; then
echo "npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-memroy - Not found" >&2
echo "npm error 404 ($TAG) token=$TOKEN" >&2
exit 1
fi
exec "$0"`

const logsSecret = "s3cr3t-token-4b1d"

// A stdio server that cannot start says why: the launcher's exec error for
// a missing command, the last lines of its stderr for one that exits (npm's
// 404), in GET /v1/servers, `warden status` and the UPSTREAM_UNAVAILABLE
// refusal, never with a secret; `warden logs` prints the log and -f follows
// it. Before, all of these said only `initialize: calling "initialize": EOF`.
func TestFailedStartShowsItsCause(t *testing.T) {
	fixtureBin := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/fixture-server")
	server := func(mode, tag string) map[string]any {
		return map[string]any{"command": "sh", "args": []string{"-c", logsBroken, fixtureBin}, "trusted": true,
			"env": map[string]any{"MODE": mode, "TAG": tag, "TOKEN": "${env:LOGS_TOKEN}"}}
	}
	servers := map[string]any{
		"missing": map[string]any{"command": "no-such-command-7f3a", "trusted": true},
		"s":       server("ok", "first"),
		"remote":  map[string]any{"url": "http://127.0.0.1:1/mcp", "disabled": true},
	}
	w := isoStart(t, t.TempDir(), servers, "LOGS_TOKEN="+logsSecret)
	cli := func(args ...string) (int, string, string) {
		cmd := exec.Command(w.bin, args...)
		cmd.Env = append(os.Environ(), "WARDEN_CONFIG="+w.cfg, "WARDEN_STATE_DIR="+w.state)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode(), o.String(), e.String()
	}
	noSecret := func(where, s string) {
		t.Helper()
		if strings.Contains(s, logsSecret) {
			t.Fatalf("%s shows the secret:\n%s", where, s)
		}
	}
	type conn struct {
		State  string   `json:"state"`
		Error  string   `json:"error"`
		Stderr []string `json:"stderr"`
	}
	server1 := func(name string) conn {
		var s struct {
			Connection conn `json:"connection"`
		}
		w.api("GET", "/v1/servers/"+name, &s)
		return s.Connection
	}

	const execErr = `warden launcher: exec: "no-such-command-7f3a": executable file not found in $PATH`
	wardentest.WaitFor(t, 20*time.Second, "the missing command's error", func() bool {
		return len(server1("missing").Stderr) > 0
	})
	if c := server1("missing"); c.State != "backoff" || !strings.Contains(c.Error, `start "no-such-command-7f3a": exec:`) || c.Stderr[len(c.Stderr)-1] != execErr {
		t.Fatalf("GET /v1/servers/missing: %+v", c)
	}
	code, out, errOut := cli("status")
	if code != 0 || !strings.Contains(out, "missing: ") || !strings.Contains(out, "  "+execErr+"\n") || !strings.Contains(out, "warden logs missing") {
		t.Fatalf("warden status: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := cli("logs", "missing"); code != 0 || !strings.Contains(out, execErr+"\n") {
		t.Fatalf("warden logs missing: exit %d\n%s%s", code, out, errOut)
	}

	// A server that worked and then fails to start again: the call is
	// refused with the cause.
	wardentest.WaitFor(t, 30*time.Second, "s ready", func() bool { return server1("s").State == "ready" })
	servers["s"] = server("broken", "second")
	logsRewrite(t, w, servers)
	wardentest.WaitFor(t, 30*time.Second, "s to fail with its stderr", func() bool {
		c := server1("s")
		return c.State == "backoff" && len(c.Stderr) == 2
	})
	c := server1("s")
	if !strings.HasPrefix(c.Stderr[0], "npm error 404 Not Found - GET https://registry.npmjs.org/") || c.Stderr[1] != "npm error 404 (second) token=***" {
		t.Fatalf("s's stderr lines: %q", c.Stderr)
	}
	code, out, errOut = cli("call", "s", "echo")
	if code != 1 || !strings.Contains(errOut, "UPSTREAM_UNAVAILABLE") || !strings.Contains(errOut, "npm error 404 Not Found") ||
		!strings.Contains(errOut, "warden logs s") {
		t.Fatalf("warden call on a server that cannot start: exit %d\n%s%s", code, out, errOut)
	}
	noSecret("the refusal", errOut)
	_, out, _ = cli("servers")
	noSecret("warden servers", out)
	_, out, _ = cli("status", "--json")
	noSecret("warden status --json", out)

	// -f prints the last lines, then what the server writes next.
	follow := exec.Command(w.bin, "logs", "s", "-f", "-n", "1")
	follow.Env = append(os.Environ(), "WARDEN_CONFIG="+w.cfg, "WARDEN_STATE_DIR="+w.state)
	followed := &wardentest.LogBuffer{}
	follow.Stdout = followed
	testenv.StartProcess(t, follow)
	wardentest.WaitFor(t, 10*time.Second, "the last line", func() bool {
		return strings.HasSuffix(followed.String(), "token=***\n")
	})
	// The last line of the log first; the server, in backoff, may have
	// written more after it since.
	if first, _, _ := strings.Cut(followed.String(), "\n"); first != "npm error 404 (second) token=***" {
		t.Fatalf("logs -f -n 1 printed more than the last line first:\n%s", followed)
	}
	servers["s"] = server("broken", "third")
	logsRewrite(t, w, servers)
	wardentest.WaitFor(t, 20*time.Second, "logs -f to show the next start's stderr", func() bool {
		return strings.Contains(followed.String(), "npm error 404 (third) token=***\n")
	})
	noSecret("warden logs -f", followed.String())
	if code, _, errOut := cli("logs", "nosuch"); code != 1 || !strings.Contains(errOut, `no server "nosuch"`) {
		t.Fatalf("warden logs nosuch: exit %d, %s", code, errOut)
	}
	if code, _, errOut := cli("logs", "remote"); code != 1 || !strings.Contains(errOut, "has no stderr log") {
		t.Fatalf("warden logs of an HTTP server: exit %d, %s", code, errOut)
	}
}

// logsRewrite replaces w's servers; the daemon reloads the file.
func logsRewrite(t *testing.T, w *isoWarden, servers map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"listen": w.listen, "mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	wardentest.WriteFileAtomic(t, w.cfg, b, 0o644)
}
