package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// readmeCommands are the command lines of the README's sh blocks, block by
// block, without comments.
func readmeCommands(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return readmeCommandsIn(string(b))
}

// readmeCommandsIn is readmeCommands of a part of the README.
func readmeCommandsIn(text string) [][]string {
	var blocks [][]string
	in := false
	for _, line := range strings.Split(text, "\n") {
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

// The README's first hour, run as written against the real reference
// servers from npm (found by npx in e2e/node, where the daemon runs),
// each command answered y where it asks: what each says and how it exits
// is what the README promises, and an MCP client then sees exactly what
// was admitted.
func TestReadmeFirstHour(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Your first hour\n")
	if !ok {
		t.Fatal(`the README has no "## Your first hour"`)
	}
	blocks := readmeCommandsIn(after)
	if len(blocks) == 0 {
		t.Fatal("no sh block after the README's first hour heading")
	}
	block := blocks[0]
	dir := t.TempDir()
	home, bin := filepath.Join(dir, "home"), filepath.Join(dir, "bin")
	for _, d := range []string{home, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(testenv.BuildBinary(t, "./cmd/warden"), filepath.Join(bin, "warden")); err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	cfg := filepath.Join(dir, "config", "config.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`{"listen": "`+listen+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range testenv.NodeEnv(t) {
		switch {
		case strings.HasPrefix(kv, "PATH="):
			env = append(env, "PATH="+bin+":"+kv[len("PATH="):])
		case strings.HasPrefix(kv, "HOME="), strings.HasPrefix(kv, "WARDEN_"):
		default:
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+home, "WARDEN_CONFIG="+cfg, "WARDEN_STATE_DIR="+filepath.Join(dir, "state"), "npm_config_update_notifier=false")
	serve := exec.Command(filepath.Join(bin, "warden"), "serve")
	serve.Dir, serve.Env = testenv.NodeDir(t), env // npx finds the packages installed there
	testenv.StartProcess(t, serve)
	testenv.WaitHTTP(t, "http://"+listen+"/healthz", 20*time.Second)

	run := func(cmd string) (code int, stdout, stderr string) {
		c := exec.Command("bash", "-c", cmd)
		c.Dir, c.Env, c.Stdin = home, env, strings.NewReader("y\n")
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return code, out.String(), errOut.String()
	}
	// What each command must do; every command of the block has a line.
	want := []struct {
		prefix string
		code   int
		says   []string
	}{
		{"mkdir -p ~/notes", 0, nil},
		{"warden servers add memory", 0, []string{"memory"}},
		{"warden servers add everything", 0, []string{"everything"}},
		{"warden servers add files", 0, []string{"files"}},
		{"warden status", 0, []string{"memory", "everything", "files", "quarantined"}},
		{"warden review memory", 3, []string{"read_graph", "create_entities"}},
		{"warden servers approve memory", 0, []string{"about to admit memory", "read_graph"}},
		{"warden review approve everything --all --except get-env", 3, []string{"get-env"}},
		{"warden servers approve everything", 3, []string{"get-env"}},
		{"warden call memory create_entities", 0, []string{"Warden"}},
		{"warden call memory read_graph", 0, []string{"guards my MCP servers"}},
		{"warden call everything get-env", 1, []string{"TOOL_PENDING", "warden review"}},
		{"warden tools files", 3, []string{"read_text_file"}},
		{"warden logs files", 0, []string{"Secure MCP Filesystem Server"}},
	}
	if len(block) != len(want) {
		t.Fatalf("the README's first hour has %d commands, the test knows %d: %q", len(block), len(want), block)
	}
	for i, cmd := range block {
		w := want[i]
		if !strings.HasPrefix(cmd, w.prefix) {
			t.Fatalf("command %d is %q, the test expects %q...", i+1, cmd, w.prefix)
		}
		if w.prefix == "warden status" {
			// As the README says: again until all three are ready.
			wardentest.WaitFor(t, 2*time.Minute, "all three servers ready", func() bool {
				_, out, _ := run(cmd)
				return strings.Count(out, " ready ") == 3
			})
		}
		code, out, errOut := run(cmd)
		if code != w.code {
			t.Fatalf("%s: exit %d, want %d\n%s%s", cmd, code, w.code, out, errOut)
		}
		for _, s := range w.says {
			if !strings.Contains(out+errOut, s) {
				t.Fatalf("%s does not say %q:\n%s%s", cmd, s, out, errOut)
			}
		}
	}

	// memory wrote your notes, as --write ~/notes let it.
	if b, err := os.ReadFile(filepath.Join(home, "notes", "memory.json")); err != nil || !strings.Contains(string(b), "guards my MCP servers") {
		t.Errorf("memory's file in ~/notes: %q, %v", b, err)
	}
	cs := wardentest.ConnectURL(t, "http://"+listen+"/mcp", nil, nil)
	names := wardentest.ToolNames(t, cs)
	for _, n := range []string{"memory__read_graph", "everything__echo"} {
		if !slices.Contains(names, n) {
			t.Errorf("the client does not see %s: %q", n, names)
		}
	}
	for _, n := range names {
		if n == "everything__get-env" || strings.HasPrefix(n, "files__") {
			t.Errorf("the client sees %s, which was not admitted", n)
		}
	}
}

// Every go test command in docs/performance.md and the README names
// benchmarks and tests that exist in the package it runs, so no figure
// points at a command that measures nothing.
func TestPerformanceCommandsExist(t *testing.T) {
	root := testenv.RepoRoot(t)
	var cmds [][]string
	for _, doc := range []string{"docs/performance.md", "README.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		found := regexp.MustCompile("`go test ([^`]*)`").FindAllStringSubmatch(string(b), -1)
		if doc == "docs/performance.md" && len(found) < 10 {
			t.Fatalf("%s has %d go test commands; want one per figure", doc, len(found))
		}
		cmds = append(cmds, found...)
	}
	for _, m := range cmds {
		args := strings.Fields(strings.ReplaceAll(m[1], `\|`, "|")) // a pipe escaped in a table
		pkg := args[len(args)-1]
		var pattern string
		for i, a := range args[:len(args)-1] {
			if (a == "-bench" || a == "-run") && strings.Trim(args[i+1], "'") != "^$" {
				pattern = strings.Trim(args[i+1], "'")
			}
		}
		if pattern == "" {
			continue // runs everything it names
		}
		if !strings.HasPrefix(pkg, "./") {
			t.Errorf("%q: want the ./package last", m[1])
			continue
		}
		names := testFuncs(t, filepath.Join(root, pkg))
		for _, alt := range strings.Split(pattern, "|") {
			top, _, _ := strings.Cut(alt, "/")
			re := regexp.MustCompile(top)
			if !slices.ContainsFunc(names, re.MatchString) {
				t.Errorf("%q: nothing in %s matches %q", m[1], pkg, top)
			}
		}
	}
}

// testFuncs are the names of the Test and Benchmark functions in dir.
func testFuncs(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests in %s: %v", dir, err)
	}
	var names []string
	fn := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)\w+)\(`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fn.FindAllStringSubmatch(string(b), -1) {
			names = append(names, m[1])
		}
	}
	return names
}
