package testenv

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	code := m.Run()
	CleanupBinaries()
	os.Exit(code)
}

func TestRepoAndNode(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("RepoRoot %s: %v", root, err)
	}
	if got, want := NodeDir(t), filepath.Join(root, "e2e", "node"); got != want {
		t.Errorf("NodeDir = %s, want %s", got, want)
	}
	node := Node22(t)
	out, err := exec.Command(node, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "v22.") {
		t.Fatalf("%s --version = %q, %v", node, out, err)
	}

	// `node` on NodeEnv's PATH is Node 22.
	cmd := exec.Command("sh", "-c", "node --version")
	cmd.Env = NodeEnv(t)
	out, err = cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "v22.") {
		t.Fatalf("node on NodeEnv PATH: %q, %v", out, err)
	}
}

func TestMissingNodeModulesNamesTheFix(t *testing.T) {
	dir := t.TempDir()
	err := checkNodeModules(dir, filepath.Join(dir, "e2e", "node"))
	if err == nil || !strings.Contains(err.Error(), "run: cd e2e/node && npm ci") {
		t.Fatalf("err = %v, want it to name the fix", err)
	}
}

func TestNPMBin(t *testing.T) {
	nm := filepath.Join(NodeDir(t), "node_modules")
	for name, want := range map[string]string{
		"@modelcontextprotocol/server-memory":     "@modelcontextprotocol/server-memory/dist/index.js",
		"server-memory":                           "@modelcontextprotocol/server-memory/dist/index.js",
		"@modelcontextprotocol/server-everything": "@modelcontextprotocol/server-everything/dist/index.js",
		"@modelcontextprotocol/server-filesystem": "@modelcontextprotocol/server-filesystem/dist/index.js",
		"@modelcontextprotocol/conformance":       "@modelcontextprotocol/conformance/dist/index.js",
	} {
		if got := NPMBin(t, name); got != filepath.Join(nm, filepath.FromSlash(want)) {
			t.Errorf("NPMBin(%q) = %s, want %s", name, got, want)
		}
	}
}

func TestBinScript(t *testing.T) {
	for _, c := range []struct{ pkg, bin, json, want string }{
		{"a", "", `{"bin":"x.js"}`, "x.js"},
		{"a", "", `{"bin":{"whatever":"y.js"}}`, "y.js"},
		{"@s/a", "", `{"bin":{"a":"a.js","b":"b.js"}}`, "a.js"},
		{"@s/a", "b", `{"bin":{"a":"a.js","b":"b.js"}}`, "b.js"},
		{"@s/a", "", `{"bin":{"c":"c.js","b":"b.js"}}`, "error"},
		{"a", "", `{}`, "error"},
	} {
		got, err := binScript(c.pkg, c.bin, []byte(c.json))
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("binScript(%q, %q, %s) = %q (%v), want %q", c.pkg, c.bin, c.json, got, err, c.want)
		}
	}
}

func TestStartProcessStopsTheGroup(t *testing.T) {
	var shPID, sleepPID int
	t.Run("inner", func(t *testing.T) {
		cmd := exec.Command("sh", "-c", "sleep 300 & echo $!; wait")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		p := StartProcess(t, cmd)
		buf := make([]byte, 64)
		n, err := out.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		sleepPID, err = strconv.Atoi(strings.TrimSpace(string(buf[:n])))
		if err != nil {
			t.Fatal(err)
		}
		shPID = p.PID()
		if p.Exited() {
			t.Fatal("exited early")
		}
	})
	for _, pid := range []int{shPID, sleepPID} {
		if !gone(pid, 5*time.Second) {
			t.Errorf("pid %d still running after cleanup", pid)
		}
	}
}

// gone reports whether pid has disappeared (or is a zombie) within timeout.
func gone(pid int, timeout time.Duration) bool {
	return Poll(timeout, func() bool {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return true
		}
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := strings.LastIndexByte(string(stat), ')')
		return err == nil && i > 0 && strings.HasPrefix(string(stat[i:]), ") Z")
	})
}

func TestStartProcessKillsWhatIgnoresSIGTERM(t *testing.T) {
	var pid int
	start := time.Now()
	t.Run("inner", func(t *testing.T) {
		p := StartProcess(t, exec.Command("sh", "-c", `trap "" TERM; echo ready; sleep 300`))
		pid = p.PID()
		WaitFor(t, 10*time.Second, "the ready line", func() bool { return strings.Contains(p.Output(), "ready") })
	})
	if !gone(pid, 5*time.Second) {
		t.Fatalf("pid %d survived cleanup", pid)
	}
	if d := time.Since(start); d < 3*time.Second {
		t.Errorf("cleanup took %s; SIGTERM was ignored, so SIGKILL should come after 3s", d)
	}
}

func TestProcessWaitAndOutput(t *testing.T) {
	p := StartProcess(t, exec.Command("sh", "-c", "echo hello; echo oops >&2; exit 3"))
	err := p.Wait(10 * time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Wait = %v, want exit status 3", err)
	}
	if out := p.Output(); !strings.Contains(out, "hello") || !strings.Contains(out, "oops") {
		t.Errorf("Output = %q", out)
	}
}

func TestBuildBinaryOnce(t *testing.T) {
	a := BuildBinary(t, "./internal/testing/fixture/cmd/fixture-server")
	st1, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	b := BuildBinary(t, "./internal/testing/fixture/cmd/fixture-server")
	st2, _ := os.Stat(b)
	if a != b || !st1.ModTime().Equal(st2.ModTime()) {
		t.Errorf("second BuildBinary rebuilt: %s %s", a, b)
	}
}

// TestConformanceAgainstEverythingServer runs the official conformance suite
// against the Go SDK's conformance fixture directly: the baseline every gateway
// conformance test compares with.
func TestConformanceAgainstEverythingServer(t *testing.T) {
	url := StartEverythingServer(t)
	start := time.Now()
	passed, failed, out := RunConformance(t, url)
	t.Logf("conformance against %s in %s: Total: %d passed, %d failed",
		url, time.Since(start).Round(time.Millisecond), passed, failed)
	if passed != ConformanceExpectedPassed || failed != 0 {
		t.Fatalf("conformance: %d passed, %d failed; want %d passed, 0 failed\n%s",
			passed, failed, ConformanceExpectedPassed, out)
	}
}

// TestServerMemoryOnNode22 runs the npm reference server the way gateway tests
// do: `node22 SCRIPT` over stdio, no npx.
func TestServerMemoryOnNode22(t *testing.T) {
	cmd := exec.Command(Node22(t), NPMBin(t, "@modelcontextprotocol/server-memory"))
	cmd.Env = append(NodeEnv(t), "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "testenv-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connect to server-memory: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "create_entities") {
		t.Fatalf("server-memory tools = %v, want create_entities among them", names)
	}
}
