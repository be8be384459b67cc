package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// statusOf is `warden status --json` of the daemon p, run as its operator
// would: with the daemon's --config and --state-dir.
func statusOf(t *testing.T, p *wardentest.Process) api.Status {
	t.Helper()
	code, out, errOut := testenv.Run(t, testenv.BuildBinary(t, "./cmd/warden"), nil, "status", "--json", "--config", p.ConfigPath, "--state-dir", p.StateDir)
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("warden status --json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	return st
}

// serverState is a server's connection state in st, "" when not listed.
func serverState(st api.Status, name string) string {
	for _, s := range st.Servers {
		if s.Name == name {
			return s.State.State
		}
	}
	return ""
}

// deepConfig is a config whose mcpServers holds arrays nested n deep: the
// JSONC parser recursed once per level, and 1.5 million overflowed its stack
// (issue 28, break 8).
func deepConfig(n int) []byte {
	return []byte(`{"mcpServers": {"x": {"command": "x", "args": ` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}}`)
}

// Break 8: `warden serve` on a config nested 1.5 million deep stops with
// exit status 1 and a message naming the file, the limit and the fix, not
// a stack overflow.
func TestServeRefusesDeepConfig(t *testing.T) {
	bin := testenv.BuildBinary(t, "./cmd/warden")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, deepConfig(1_500_000), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfg, "--state-dir", filepath.Join(dir, "state"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	msg := stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("warden serve on a config nested 1.5M deep: %v, want exit status 1\nstderr (first 2000 bytes):\n%.2000s", err, msg)
	}
	for _, want := range []string{cfg, "nested more than 64 deep", "remove the extra nesting"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%.2000s", want, msg)
		}
	}
	for _, bad := range []string{"fatal error", "stack overflow", "goroutine "} {
		if strings.Contains(msg, bad) {
			t.Errorf("stderr has %q:\n%.2000s", bad, msg)
		}
	}
}

// Break 8, on reload: the config replaced by one nested 1.5 million deep is
// refused; the daemon keeps running with its servers, and status says why.
func TestReloadRefusesDeepConfig(t *testing.T) {
	fx := testenv.BuildBinary(t, fixturePkg)
	p := wardentest.ServeProcess(t, "", map[string]any{"keep": map[string]any{"command": fx, "trusted": true}})
	wardentest.WaitFor(t, 20*time.Second, "keep ready", func() bool { return serverState(statusOf(t, p), "keep") == "ready" })
	cs := wardentest.ConnectURL(t, "http://"+p.Addr+"/mcp", nil, nil)
	wardentest.CallText(t, cs, "keep__echo", map[string]any{"before": "reload"})

	wardentest.WriteFileAtomic(t, p.ConfigPath, deepConfig(1_500_000), 0o600)
	var st api.Status
	wardentest.WaitFor(t, 20*time.Second, "status to show the refused reload", func() bool {
		if p.Exited() {
			t.Fatalf("warden exited on a deep config: %v\n%.3000s", p.Err(), p.Output())
		}
		st = statusOf(t, p)
		return st.ReloadError != ""
	})
	if !strings.Contains(st.ReloadError, "nested more than 64 deep") || !strings.Contains(st.ReloadError, p.ConfigPath) {
		t.Fatalf("reload_error = %q, want the file and the depth limit named", st.ReloadError)
	}
	if s := serverState(st, "keep"); s != "ready" {
		t.Fatalf("after the refused reload keep is %q, want ready", s)
	}
	wardentest.CallText(t, cs, "keep__echo", map[string]any{"after": "refused reload"})
	if out := p.Output(); strings.Contains(out, "stack overflow") || p.Exited() {
		t.Fatalf("warden crashed:\n%.3000s", out)
	}
}

// Break 8, for `warden import`: another host's file (JSON or Codex's TOML)
// nested 1.5 million deep is refused with exit status 1 naming the file
// and the limit, and Warden's own config is left as it was.
func TestImportRefusesDeepFile(t *testing.T) {
	bin := testenv.BuildBinary(t, "./cmd/warden")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	own := []byte(`{"mcpServers": {}}`)
	if err := os.WriteFile(cfg, own, 0o600); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", 1_500_000) + strings.Repeat("]", 1_500_000)
	deepTOML := strings.Repeat("[", 5000) + strings.Repeat("]", 5000) // a TOML file is at most 256 KiB
	for name, content := range map[string]string{
		"mcp.json":    `{"mcpServers": {"x": {"command": "x", "args": ` + deep + `}}}`,
		"config.toml": "[mcp_servers.x]\ncommand = \"x\"\nargs = " + deepTOML + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name)
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := testenv.Run(t, bin, nil, "import", file, "--config", cfg, "--state-dir", filepath.Join(dir, "state"))
			if code != 1 || !strings.Contains(errOut, file) || !strings.Contains(errOut, "nested more than 64 deep") {
				t.Fatalf("warden import of a file nested 5,000 deep or more: exit %d\nstdout: %.2000s\nstderr: %.2000s", code, out, errOut)
			}
			if strings.Contains(errOut, "goroutine ") {
				t.Fatalf("warden import crashed:\n%.2000s", errOut)
			}
			if got, _ := os.ReadFile(cfg); !bytes.Equal(got, own) {
				t.Fatalf("Warden's config changed: %s", got)
			}
		})
	}
}
