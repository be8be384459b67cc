package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// cliEnv is the environment of a CLI run that is told nothing about the
// daemon but its config file: no state dir variable, and default dirs in a
// temporary home, so the daemon's own state dir is not found by chance.
func cliEnv(t *testing.T) []string {
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WARDEN_") && !strings.HasPrefix(kv, "XDG_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}

// Items 3, 7 and 9 of issue 12, with the real binary:
//   - serve --listen and --state-dir: the CLI finds that daemon and its
//     token from the config file alone;
//   - server entries that cannot be loaded affect only themselves: the rest
//     loads and each shows its problem in status, servers and /v1/servers;
//   - servers add says whether the running daemon loaded the server;
//   - while the file has a syntax error, status and servers still work and
//     show the reload error.
func TestBadEntriesAffectOnlyThemselves(t *testing.T) {
	bin := testenv.BuildBinary(t, "./cmd/warden")
	fixtureBin := testenv.BuildBinary(t, fixturePkg)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	state := filepath.Join(dir, "elsewhere")
	listen := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	file := fmt.Sprintf(`{
  // no "listen": the daemon is told on its command line
  "mcpServers": {
    "good": {"command": %q, "trusted": true},
    "typo": {"comand": "x"},
    "timing": {"command": "x", "callTimeout": "soon"},
    "vscode": {"command": "x", "env": {"KEY": "${input:api-key}"}}
  }
}
`, fixtureBin)
	if err := os.WriteFile(cfg, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	env := cliEnv(t)
	serve := exec.Command(bin, "serve", "--config", cfg, "--state-dir", state, "--listen", listen)
	serve.Env = env
	testenv.StartProcess(t, serve)
	testenv.WaitHTTP(t, "http://"+listen+"/healthz", 20*time.Second)

	// The CLI finds the daemon by its state dir, as the person who started
	// it with --state-dir says it in their shell.
	cliEnv := append(slices.Clone(env), "WARDEN_STATE_DIR="+state)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return testenv.Run(t, bin, cliEnv, append([]string{"--config", cfg}, args...)...)
	}
	var out string
	// wait polls until the command exits with status and prints want.
	wait := func(what string, status int, args []string, want ...string) {
		t.Helper()
		var code int
		var stderr string
		ok := wardentest.Poll(20*time.Second, func() bool {
			code, out, stderr = cli(args...)
			ok := code == status
			for _, w := range want {
				ok = ok && strings.Contains(out, w)
			}
			return ok
		})
		if !ok {
			t.Fatalf("%s: warden %s: exit %d\nstdout:\n%s\nstderr:\n%s", what, strings.Join(args, " "), code, out, stderr)
		}
	}
	// status exits 1: the file does not wholly load.
	wait("status, the good server ready", 1, []string{"status"}, "good", "ready")
	for _, want := range []string{
		"typo: config " + cfg + ": mcpServers.typo.comand: unknown field",
		`timing: config ` + cfg + `: mcpServers.timing.callTimeout: "soon" is not a duration`,
		"vscode: config " + cfg + ": mcpServers.vscode.env.KEY: ${input:api-key} asks VS Code to prompt for a value, which Warden cannot do",
		"not loaded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	// A server added with a variable the daemon lacks is reported as not
	// loaded; one added after it loads.
	code, out, stderr := cli("servers", "add", "remote", "--url", "https://example.test/mcp", "--header", "Authorization=Bearer ${env:REMOTE_TOKEN}")
	if code != 1 || !strings.Contains(out, "added server remote") ||
		!strings.Contains(stderr, "the running warden did not load remote: config "+cfg+": mcpServers.remote.headers.Authorization: ${env:REMOTE_TOKEN} refers to REMOTE_TOKEN, which is not set") {
		t.Fatalf("servers add remote: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	code, out, stderr = cli("servers", "add", "later", "--trusted", "--", fixtureBin, "-name", "later")
	if code != 0 || !strings.Contains(out, "the running warden loaded the change") {
		t.Fatalf("servers add later: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	wait("the server added after the bad one ready", 0, []string{"servers"}, "later", "remote: config")
	code, out, _ = cli("servers", "--json")
	if code != 0 || !strings.Contains(out, `"config_error": "config `+cfg+`: mcpServers.remote.headers.Authorization`) {
		t.Fatalf("servers --json: exit %d\n%s", code, out)
	}
	code, out, stderr = cli("review", "remote")
	if code != 0 || !strings.Contains(out, "remote: config "+cfg+": mcpServers.remote.headers.Authorization") {
		t.Fatalf("review remote (in the file, not loaded): exit %d\n%s\n%s", code, out, stderr)
	}
	code, _, stderr = cli("servers", "approve", "remote", "--yes")
	if code != 1 || !strings.Contains(stderr, `server "remote" is in the config file but its entry cannot be loaded: config `+cfg) {
		t.Fatalf("servers approve remote (not loaded): exit %d\n%s", code, stderr)
	}

	// A syntax error keeps the running config; read commands still reach
	// the daemon and show why the file was refused.
	if err := os.WriteFile(cfg, []byte(file[:len(file)-4]), 0o600); err != nil {
		t.Fatal(err)
	}
	for cmd, status := range map[string]int{"status": 1, "servers": 0} {
		wait("the refused reload shown", status, []string{cmd}, "last reload refused, still running the previous config", "invalid JSON", "good")
	}
}

// Item 2 of issue 12, with the real binary: VS Code's own file serves as
// Warden's config as it is (its "inputs" ignored with a logged note), and
// `warden import` copies a Cline file's servers into it, which the running
// daemon loads.
func TestHostFilesWorkAsTheyAre(t *testing.T) {
	bin := testenv.BuildBinary(t, "./cmd/warden")
	fixtureBin := testenv.BuildBinary(t, fixturePkg)
	dir := t.TempDir()
	cfg := filepath.Join(dir, ".vscode", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	vscode := fmt.Sprintf(`{
  "inputs": [{"type": "promptString", "id": "key", "description": "API key", "password": true}],
  "servers": {
    "fx": {"type": "stdio", "command": %q, "args": ["-name", "fx"], "trusted": true}
  }
}
`, fixtureBin)
	cline := filepath.Join(dir, "cline_mcp_settings.json")
	clineText := fmt.Sprintf(`{"mcpServers": {"cl": {"command": %q, "args": ["-name", "cl"], "autoApprove": ["echo"], "timeout": 30, "disabled": false}}}`, fixtureBin)
	if err := os.WriteFile(cfg, []byte(vscode), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cline, []byte(clineText), 0o600); err != nil {
		t.Fatal(err)
	}
	env := cliEnv(t)
	var log wardentest.LogBuffer
	serve := exec.Command(bin, "serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state"), "--listen", listen)
	serve.Env, serve.Stderr = env, &log
	env = append(env, "WARDEN_STATE_DIR="+filepath.Join(dir, "state")) // the CLI's, as the person's shell says it
	testenv.StartProcess(t, serve)
	testenv.WaitHTTP(t, "http://"+listen+"/healthz", 20*time.Second)
	if want := "note: config " + cfg + `: inputs (line 2): ignored: VS Code's prompts for ${input:...} values, which Warden cannot show`; !strings.Contains(log.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, log.String())
	}

	code, out, stderr := testenv.Run(t, bin, env, "--config", cfg, "import", cline)
	if code != 0 || !strings.Contains(out, "imported cl from "+cline) || !strings.Contains(out, "the running warden loaded the change") ||
		!strings.Contains(stderr, "mcpServers.cl.autoApprove (line 1): ignored: Cline's list of tools it calls without asking") {
		t.Fatalf("import: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if !wardentest.Poll(20*time.Second, func() bool {
		code, out, stderr = testenv.Run(t, bin, env, "--config", cfg, "servers")
		return code == 0 && strings.Count(out, "ready") == 2
	}) {
		t.Fatalf("servers: exit %d\n%s\n%s\n%s", code, out, stderr, log.String())
	}
	if data, _ := os.ReadFile(cfg); !strings.Contains(string(data), `"cl": {`) || strings.Contains(string(data), "mcpServers") {
		t.Fatalf("the import did not go into VS Code's \"servers\":\n%s", data)
	}
}

// hostServe runs `warden serve --config file` as a person whose host wrote
// that file would: its own state dir, a free port. It answers the CLI of
// that daemon and the daemon's log.
func hostServe(t *testing.T, bin, file string, env []string) (cli func(args ...string) (int, string, string), log *wardentest.LogBuffer) {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	listen := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	log = &wardentest.LogBuffer{}
	serve := exec.Command(bin, "serve", "--config", file, "--state-dir", state, "--listen", listen)
	serve.Env, serve.Stderr = env, log
	testenv.StartProcess(t, serve)
	testenv.WaitHTTP(t, "http://"+listen+"/healthz", 20*time.Second)
	cliEnv := append(slices.Clone(env), "WARDEN_STATE_DIR="+state)
	return func(args ...string) (int, string, string) {
		t.Helper()
		return testenv.Run(t, bin, cliEnv, append([]string{"--config", file}, args...)...)
	}, log
}

// waitReady waits until warden status says every one of names is ready
// and the whole file loaded (exit 0).
func waitReady(t *testing.T, cli func(args ...string) (int, string, string), log *wardentest.LogBuffer, names ...string) {
	t.Helper()
	var code int
	var out, stderr string
	ok := wardentest.Poll(30*time.Second, func() bool {
		code, out, stderr = cli("status", "--json")
		var st api.Status
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
			return false
		}
		for _, name := range names {
			if !slices.ContainsFunc(st.Servers, func(s api.Server) bool { return s.Name == name && s.State.State == "ready" }) {
				return false
			}
		}
		return len(st.Servers) == len(names)
	})
	if !ok {
		t.Fatalf("status --json: exit %d, want %s ready:\n%s\n%s\nthe daemon's log:\n%s", code, strings.Join(names, ", "), out, stderr, log.String())
	}
}

// Issue 29 item 1, with the real binary: four hosts' files, each written
// as its host documents it, are Warden's config as they are. Claude
// Desktop's with its own settings beside its servers; a VS Code workspace
// file whose server takes ${workspaceFolder} in an argument and its
// variables from envFile; a Cursor project file with
// ${workspaceFolderBasename}, ${userHome} and ${env:}; Windsurf's with a
// serverUrl server and disabledTools. `warden serve --config FILE` starts
// every server in each, status exits 0, and the envFile's value reaches
// its server's environment.
func TestHostFilesOfFourHostsServe(t *testing.T) {
	bin := testenv.BuildBinary(t, "./cmd/warden")
	fixtureBin := testenv.BuildBinary(t, fixturePkg)
	node, memory := testenv.Node22(t), testenv.NPMBin(t, "server-memory")
	env := append(cliEnv(t), "CURSOR_FX_KEY=cursor-key", "WS_TOKEN=windsurf-token")
	var home string
	for _, kv := range env {
		if h, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = h
		}
	}
	dir := t.TempDir()
	mark := fmt.Sprintf("hostfiles-%d", time.Now().UnixNano())
	write := func(path, text string) string {
		t.Helper()
		testenv.WriteFiles(t, "", map[string]string{path: text})
		return path
	}

	t.Run("Claude Desktop", func(t *testing.T) {
		file := write(filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"), fmt.Sprintf(`{
  "globalShortcut": "Ctrl+Alt+Space",
  "mcpServers": {
    "claude-fx": {"command": %q, "args": ["-name", "claude-fx"], "env": {"FX_MODE": "desktop"}}
  },
  "preferences": {"menuBarEnabled": false, "quickEntryShortcut": "off"},
  "isUsingBuiltInNodeForMcp": false
}`, fixtureBin))
		cli, log := hostServe(t, bin, file, env)
		waitReady(t, cli, log, "claude-fx")
		for _, want := range []string{"globalShortcut (line 2): ignored: Claude Desktop's own setting", "preferences (line 6): ignored", "isUsingBuiltInNodeForMcp (line 7): ignored"} {
			if !strings.Contains(log.String(), want) {
				t.Errorf("the log lacks %q:\n%s", want, log.String())
			}
		}
	})

	t.Run("VS Code", func(t *testing.T) {
		proj := filepath.Join(dir, "proj")
		graph := write(filepath.Join(proj, "memory.jsonl"), `{"type":"entity","name":"reached-through-envFile","entityType":"proof","observations":[]}`+"\n")
		write(filepath.Join(proj, ".env"), "# the server's settings\nMEMORY_FILE_PATH="+graph+"\n")
		file := write(filepath.Join(proj, ".vscode", "mcp.json"), fmt.Sprintf(`{
  "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
  "servers": {
    "memory": {"type": "stdio", "command": %q, "args": [%q, "${workspaceFolder}/%s"], "envFile": "${workspaceFolder}/.env"}
  }
}`, node, memory, mark))
		cli, log := hostServe(t, bin, file, env)
		waitReady(t, cli, log, "memory")
		if len(testenv.ProcessesMentioning(filepath.Join(proj, mark))) == 0 {
			t.Errorf("no process has the argument ${workspaceFolder}/%s as %s", mark, filepath.Join(proj, mark))
		}
		if code, out, stderr := cli("servers", "approve", "memory", "--yes"); code != 0 {
			t.Fatalf("servers approve memory: exit %d\n%s\n%s", code, out, stderr)
		}
		if code, out, stderr := cli("call", "memory", "read_graph"); code != 0 || !strings.Contains(out, "reached-through-envFile") {
			t.Fatalf("call memory read_graph: exit %d, want the graph of the file MEMORY_FILE_PATH names in .env\n%s\n%s", code, out, stderr)
		}
	})

	t.Run("Cursor", func(t *testing.T) {
		file := write(filepath.Join(dir, "cproj", ".cursor", "mcp.json"), fmt.Sprintf(`{
  "mcpServers": {
    "cursor-fx": {"type": "stdio", "command": %q, "args": ["-name", "${workspaceFolderBasename}", "${userHome}/%s"],
                  "env": {"FX_KEY": "${env:CURSOR_FX_KEY}"}}
  }
}`, fixtureBin, mark))
		cli, log := hostServe(t, bin, file, env)
		waitReady(t, cli, log, "cursor-fx")
		if len(testenv.ProcessesMentioning(filepath.Join(home, mark))) == 0 {
			t.Errorf("no process has the argument ${userHome}/%s as %s", mark, filepath.Join(home, mark))
		}
	})

	t.Run("Windsurf", func(t *testing.T) {
		remote := fixture.NewServer(fixture.Options{}).Serve(t)
		file := write(filepath.Join(home, ".codeium", "windsurf", "mcp_config.json"), fmt.Sprintf(`{
  "mcpServers": {
    "windsurf-fx": {"command": %q, "args": ["-name", "windsurf-fx"], "disabled": false, "disabledTools": ["delete_value"]},
    "windsurf-remote": {"serverUrl": %q, "headers": {"Authorization": "Bearer ${env:WS_TOKEN}"}}
  }
}`, fixtureBin, remote))
		cli, log := hostServe(t, bin, file, env)
		waitReady(t, cli, log, "windsurf-fx", "windsurf-remote")
		code, out, stderr := cli("tools", "windsurf-fx", "--json")
		var tools []api.Tool
		if (code != 0 && code != 3) || json.Unmarshal([]byte(out), &tools) != nil ||
			!slices.ContainsFunc(tools, func(tl api.Tool) bool { return tl.Name == "delete_value" && tl.Hidden }) {
			t.Errorf("tools windsurf-fx: exit %d, want delete_value hidden\n%s\n%s", code, out, stderr)
		}
	})
}
