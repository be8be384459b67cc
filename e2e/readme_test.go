package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testenv"
)

// readmeCommands are the command lines of the README's sh blocks, block by
// block, without comments.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case line == "```sh":
			in = true
			blocks = append(blocks, nil)
		case line == "```":
			in = false
		case in:
			cmd, _, _ := strings.Cut(line, "  #")
			if cmd = strings.TrimSpace(cmd); cmd != "" {
				blocks[len(blocks)-1] = append(blocks[len(blocks)-1], cmd)
			}
		}
	}
	return blocks
}

// The README's start works as written: its first command runs the daemon,
// and before any `warden ...` command it says how to get a `warden` on the
// PATH, in a block that, run as it is (in a GOPATH of the test's own),
// installs it and talks to that daemon.
func TestReadmeStartAsWritten(t *testing.T) {
	blocks := readmeCommands(t)
	if len(blocks) == 0 || len(blocks[0]) == 0 || blocks[0][0] != "go run ./cmd/warden serve" {
		t.Fatalf("the README's first command is not go run ./cmd/warden serve: %q", blocks)
	}
	var install []string // the block that installs warden
	for _, block := range blocks {
		for _, cmd := range block {
			if cmd == "go install ./cmd/warden" && install == nil {
				install = block
			}
			if strings.HasPrefix(cmd, "warden ") && install == nil {
				t.Fatalf("the README uses %q before it says how to install warden (go install ./cmd/warden)", cmd)
			}
		}
	}
	if install == nil {
		t.Fatal("the README never installs warden with go install ./cmd/warden")
	}

	dir := t.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	cfg := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(map[string]any{"listen": listen})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gopath := filepath.Join(dir, "gopath")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOBIN=") && !strings.HasPrefix(kv, "GOPATH=") {
			env = append(env, kv)
		}
	}
	// The test's own GOPATH, with the modules already downloaded: nothing
	// is fetched, and nothing lands outside the temp dir.
	env = append(env, "GOPATH="+gopath, "GOMODCACHE="+strings.TrimSpace(string(modcache)), "GOPROXY=off", "GOFLAGS=",
		"WARDEN_CONFIG="+cfg, "WARDEN_STATE_DIR="+filepath.Join(dir, "state"))

	serve := exec.Command("bash", "-c", blocks[0][0])
	serve.Dir, serve.Env = testenv.RepoRoot(t), env
	testenv.StartProcess(t, serve)
	testenv.WaitHTTP(t, "http://"+listen+"/healthz", 3*time.Minute)

	run := exec.Command("bash", "-e", "-c", strings.Join(install, "\n"))
	run.Dir, run.Env = testenv.RepoRoot(t), env
	var out, errOut bytes.Buffer
	run.Stdout, run.Stderr = &out, &errOut
	if err := run.Run(); err != nil {
		t.Fatalf("the README's install block %q: %v\n%s%s", install, err, out.String(), errOut.String())
	}
	if _, err := os.Stat(filepath.Join(gopath, "bin", "warden")); err != nil {
		t.Fatalf("warden is not where the README says, $(go env GOPATH)/bin: %v", err)
	}
	if !strings.Contains(out.String(), "at http://"+listen) || !strings.Contains(out.String(), "config "+cfg) {
		t.Fatalf("warden status did not reach the daemon the README started:\n%s%s", out.String(), errOut.String())
	}
}
