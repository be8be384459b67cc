package wardentest

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// Process is a `warden serve` started by ServeProcess: the process, the
// address it listens on, its config file and its state dir.
type Process struct {
	*testenv.Process
	Addr       string
	ConfigPath string
	StateDir   string
}

// ServeProcess runs `warden serve` as a process of its own (for benchmarks,
// which measure the daemon apart from the test process) with servers as its
// mcpServers, on a free loopback port and a fresh state dir, and waits until
// it answers /healthz. bin is the warden binary; "" builds ./cmd/warden.
// env is added to the process's environment.
func ServeProcess(t testing.TB, bin string, servers map[string]any, env ...string) *Process {
	t.Helper()
	return ServeConfig(t, bin, map[string]any{"mcpServers": servers}, env...)
}

// ServeConfig is ServeProcess with cfg as the whole config file (its
// "listen" is set).
func ServeConfig(t testing.TB, bin string, cfg map[string]any, env ...string) *Process {
	t.Helper()
	if bin == "" {
		bin = testenv.BuildBinary(t, "./cmd/warden")
	}
	dir := t.TempDir()
	p := &Process{Addr: "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)),
		ConfigPath: filepath.Join(dir, "config.json"), StateDir: filepath.Join(dir, "state")}
	cfg = maps.Clone(cfg)
	cfg["listen"] = p.Addr
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.ConfigPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p.serve(t, bin, env)
	return p
}

// Again stops p, if it runs still, and starts `warden serve` anew on its
// config and state dir, as a restart finds them. bin is the warden binary.
func (p *Process) Again(t testing.TB, bin string, env ...string) *Process {
	t.Helper()
	p.Stop()
	again := &Process{Addr: p.Addr, ConfigPath: p.ConfigPath, StateDir: p.StateDir}
	again.serve(t, bin, env)
	return again
}

func (p *Process) serve(t testing.TB, bin string, env []string) {
	cmd := exec.Command(bin, "serve", "--config", p.ConfigPath, "--state-dir", p.StateDir)
	cmd.Env = append(os.Environ(), env...)
	p.Process = testenv.StartProcess(t, cmd)
	testenv.WaitHTTP(t, "http://"+p.Addr+"/healthz", 20*time.Second)
}

// URL is the address of path on the process's listener.
func (p *Process) URL(path string) string { return "http://" + p.Addr + path }
