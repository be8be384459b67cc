package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// isoWarden is a real `warden serve` started with its config and state dir
// named in its environment (WARDEN_CONFIG, WARDEN_STATE_DIR), as a person
// might run it.
type isoWarden struct {
	t                 *testing.T
	bin, cfg, state   string
	listen, tokenPath string
	proc              *testenv.Process
}

func isoStart(t *testing.T, dir string, servers map[string]any, env ...string) *isoWarden {
	t.Helper()
	return isoStartAt(t, dir, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), servers, env...)
}

func (w *isoWarden) token() string {
	b, err := os.ReadFile(w.tokenPath)
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// api calls the operator API as the test (not a child of Warden) and
// decodes the answer into out.
func (w *isoWarden) api(method, path string, out any) int {
	w.t.Helper()
	req, _ := http.NewRequest(method, "http://"+w.listen+path, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+w.token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

type isoOutcome struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// isoAttempts are what the intruder tries; each must fail under isolation
// and succeed without it.
var isoAttempts = []string{
	"read_token", "read_store", "read_config", "read_other_log", "list_state_dir",
	"read_warden_environ", "read_warden_memory", "env_has_other_secret", "env_has_warden_vars",
	"api_with_found_token", "api_with_stolen_token", "approve_self", "api_fd_in_flight", "api_nondumpable_child", "api_via_socket", "mcp_as_client", "mcp_nondumpable_child",
	"see_other_process", "read_other_environ", "signal_other", "has_capabilities",
}

// A hostile stdio server, quarantined and then approved, tries to read
// Warden's token, store, config, another server's log, Warden's environment
// and memory, to find another server's secret in its own environment, to use
// the operator API with a token it found or was given, and to approve
// itself; to act as an MCP client of another server through Warden's /mcp;
// and to read another server's environment, signal it, and hold
// capabilities. Under the default isolation every attempt fails, also when
// Warden runs as an ordinary user ("unprivileged", when the tests run as
// root; otherwise "default" is that); with isolation off
// (WARDEN_ISOLATION=off) every one of them succeeds, which shows the
// attempts are real.
func TestIsolationHostileServer(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/intruder")
	eachUser(t, []string{"default", "off"}, built, func(t *testing.T, mode, dir, intruder string, uid int) {
		work := filepath.Join(dir, "work")
		if err := os.Mkdir(work, 0o755); err != nil {
			t.Fatal(err)
		}
		const secret = "victim-secret-9f3a1c"
		stolen, pidFile, report := filepath.Join(work, "stolen-token"), filepath.Join(work, "warden.pid"), filepath.Join(work, "report.json")
		listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
		args := func(name string) []string {
			return []string{"-name", name, "-state", filepath.Join(dir, "state"), "-config", filepath.Join(dir, "config", "config.json"),
				"-other-log", "victim", "-secret", secret, "-token-file", stolen, "-warden-pid-file", pidFile, "-api", "http://" + listen}
		}
		servers := map[string]any{
			"victim": map[string]any{"command": intruder, "args": args("victim"), "trusted": true, "env": map[string]any{"API_KEY": "${env:VICTIM_KEY}"}},
			// Its cwd is where it writes its report: a server may write there.
			"intruder": map[string]any{"command": intruder, "args": append(args("intruder"), "-report", report), "cwd": work},
		}
		env := []string{"VICTIM_KEY=" + secret}
		if mode == "off" {
			env = append(env, "WARDEN_ISOLATION=off")
		}
		w := isoStartAs(t, dir, listen, servers, uid, env...)
		wardentest.WaitFor(t, 20*time.Second, "the victim's log", func() bool {
			fi, err := os.Stat(filepath.Join(w.state, "logs", "victim.log"))
			return err == nil && fi.Size() > 0
		})
		// Hand the intruder the token and Warden's PID, as if it had
		// learnt them some other way.
		wardentest.WriteFileAtomic(t, stolen, []byte(w.token()), 0o644)
		wardentest.WriteFileAtomic(t, pidFile, []byte(strconv.Itoa(w.proc.PID())), 0o644)

		got := isoReport(t, report)
		isoCheck(t, "while quarantined", got, mode == "off", os.Geteuid() != 0)

		var srv struct{ Quarantined bool }
		w.api("GET", "/v1/servers/intruder", &srv)
		if mode == "off" {
			if srv.Quarantined {
				t.Fatal("without isolation the intruder's self-approval should have worked; it is still quarantined")
			}
			return
		}
		if !srv.Quarantined {
			t.Fatal("the intruder approved itself")
		}
		// Approved by the operator, it is called and tries again.
		if code := w.api("POST", "/v1/servers/intruder/approve", nil); code != http.StatusOK {
			t.Fatalf("operator approve: %d", code)
		}
		cs := wardentest.ConnectURL(t, "http://"+listen+"/mcp/intruder", nil, nil)
		var res *mcp.CallToolResult
		wardentest.WaitFor(t, 20*time.Second, "the approved intruder to be callable", func() bool {
			r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "attempt", Arguments: map[string]any{}})
			res = r
			return err == nil && !r.IsError
		})
		got = nil
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &got); err != nil {
			t.Fatal(err)
		}
		isoCheck(t, "after approval", got, false, os.Geteuid() != 0)
	})
}

func isoStartAt(t *testing.T, dir, listen string, servers map[string]any, env ...string) *isoWarden {
	return isoStartAs(t, dir, listen, servers, -1, env...)
}

// nobody is the ordinary user the "unprivileged" runs take when the tests
// run as root.
const nobody = 65534

// isoStartAs starts Warden as user uid (and its group), or as the test's
// user when uid is -1; dir must then be the user's to write (worldDir).
func isoStartAs(t *testing.T, dir, listen string, servers map[string]any, uid int, env ...string) *isoWarden {
	t.Helper()
	return isoStartConfig(t, dir, filepath.Join(dir, "config", "config.json"), listen, servers, uid, env...)
}

// isoStartConfig is isoStartAs with the config file at cfg (its directory
// made 0700 when missing).
func isoStartConfig(t *testing.T, dir, cfg, listen string, servers map[string]any, uid int, env ...string) *isoWarden {
	t.Helper()
	w := &isoWarden{t: t, bin: testenv.BuildBinary(t, "./cmd/warden"),
		cfg: cfg, state: filepath.Join(dir, "state"), listen: listen}
	w.tokenPath = filepath.Join(w.state, "api-token")
	if err := os.MkdirAll(filepath.Dir(w.cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"listen": w.listen, "mcpServers": servers})
	if err := os.WriteFile(w.cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(w.bin, "serve")
	if uid >= 0 {
		cmd.Path = copyBinary(t, w.bin, filepath.Join(dir, "warden"))
		if err := filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
			return cmp.Or(err, os.Lchown(path, uid, uid))
		}); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	cmd.Env = append(os.Environ(), append(env, "WARDEN_CONFIG="+w.cfg, "WARDEN_STATE_DIR="+w.state)...)
	w.proc = testenv.StartProcess(t, cmd)
	testenv.WaitHTTP(t, "http://"+w.listen+"/healthz", 20*time.Second)
	return w
}

// worldDir is a temporary directory that any user may enter (t.TempDir's
// parents are root's alone when the tests run as root).
func worldDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "warden-iso-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyBinary copies the binary at from to to, executable by everyone.
func copyBinary(t *testing.T, from, to string) string {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return to
}

// isoReport waits for the intruder's report of its attempts at start.
func isoReport(t *testing.T, path string) map[string]isoOutcome {
	t.Helper()
	var got map[string]isoOutcome
	wardentest.WaitFor(t, 30*time.Second, "the intruder's report", func() bool {
		b, err := os.ReadFile(path)
		return err == nil && json.Unmarshal(b, &got) == nil
	})
	return got
}

// isoCheck wants every attempt to have failed, or with wantOK every one to
// have worked.
// uncapped says the tests run as an ordinary user: without isolation a
// server holds Warden's capabilities, then none, so has_capabilities fails
// there too.
func isoCheck(t *testing.T, when string, got map[string]isoOutcome, wantOK, uncapped bool) {
	t.Helper()
	for _, a := range isoAttempts {
		o, ok := got[a]
		if !ok {
			t.Errorf("%s: no outcome for %s", when, a)
			continue
		}
		want := wantOK && !(uncapped && a == "has_capabilities")
		if o.OK != want {
			t.Errorf("%s: %s worked=%v (%s), want worked=%v", when, a, o.OK, o.Detail, want)
		}
	}
	if len(got) != len(isoAttempts) {
		t.Errorf("%s: outcomes %v, want exactly %v", when, got, isoAttempts)
	}
}

// kill -9 of Warden leaves no stdio server, child or grandchild behind, in
// any order of exits: servers that exit on EOF (their stdin closes when
// Warden dies, racing the kill) and servers that ignore EOF and SIGTERM,
// each with a grandchild; 100 trials with namespaces and 30 with the reaper
// that replaces them where the kernel has no user namespaces.
func TestKill9LeavesNoProcess(t *testing.T) {
	servers := map[string]any{
		"eof":    map[string]any{"command": "sh", "args": []string{"-c", "sleep 1001 & exec cat >/dev/null"}},
		"ignore": map[string]any{"command": "sh", "args": []string{"-c", "trap '' TERM HUP; sleep 1002 & wait; sleep 1003"}},
	}
	for _, tc := range []struct {
		isolation string
		trials    int
	}{{"", 100}, {"reaper", 30}} {
		t.Run("isolation="+cmp.Or(tc.isolation, "default"), func(t *testing.T) {
			for trial := range tc.trials {
				dir := t.TempDir()
				w := isoStart(t, dir, servers, "WARDEN_ISOLATION="+tc.isolation)
				var tree []testenv.Proc
				wardentest.WaitFor(t, 20*time.Second, "both servers and their grandchildren", func() bool {
					tree = testenv.Descendants(w.proc.PID())
					var n int
					for _, p := range tree {
						if p.What == "sleep 1001" || p.What == "sleep 1002" {
							n++
						}
					}
					return n == 2
				})
				if err := w.proc.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				<-w.proc.Done()
				deadline := time.Now().Add(10 * time.Second)
				for _, p := range tree {
					if !wardentest.Poll(time.Until(deadline), func() bool { return !p.Alive() }) {
						t.Fatalf("trial %d: %q (pid %d) outlived kill -9 of Warden", trial, p.What, p.PID)
					}
				}
				w.proc.Stop()
			}
		})
	}
}

// The reference servers from npm work under the default isolation, and a
// "sandbox" holds: the filesystem server, given two directories, reaches
// only the one its sandbox's paths name (the same server without a sandbox
// reaches both), and a server with "network": false can't connect to
// anything, Warden included.
func TestReferenceServersUnderIsolation(t *testing.T) {
	dir := t.TempDir()
	allowed, other := filepath.Join(dir, "allowed"), filepath.Join(dir, "other")
	for _, d := range []string{allowed, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		wardentest.WriteFileAtomic(t, filepath.Join(d, "note.txt"), []byte("hello from "+filepath.Base(d)), 0o644)
	}
	node, nodeDir := testenv.Node22(t), testenv.NodeDir(t)
	// Where the packages really are (a worktree links node_modules): rights
	// are never granted through a link.
	modules, err := filepath.EvalSymlinks(filepath.Join(nodeDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	fs := func(sandbox map[string]any) map[string]any {
		s := map[string]any{"command": node, "args": []string{testenv.NPMBin(t, "server-filesystem"), allowed, other}, "trusted": true}
		if sandbox != nil {
			s["sandbox"] = sandbox
		}
		return s
	}
	listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	// A server writes its cwd, not any path its env names.
	memory := memoryServer(t)
	memory["cwd"] = filepath.Dir(memory["env"].(map[string]string)["MEMORY_FILE_PATH"])
	isoStartAt(t, dir, listen, map[string]any{
		"memory":     memory,
		"everything": map[string]any{"command": node, "args": []string{testenv.NPMBin(t, "server-everything")}, "trusted": true},
		"fs":         fs(map[string]any{"paths": map[string]any{"read": []string{nodeDir, modules}, "write": []string{allowed}}}),
		"fsopen":     fs(nil),
		"offline": map[string]any{"command": testenv.BuildBinary(t, "./internal/testing/fixture/cmd/intruder"), "trusted": true,
			"args": []string{"-api", "http://" + listen}, "sandbox": map[string]any{"network": false}},
	})
	call := func(server, tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		cs := wardentest.ConnectURL(t, "http://"+listen+"/mcp/"+server, nil, nil)
		var res *mcp.CallToolResult
		wardentest.WaitFor(t, 60*time.Second, server+" to answer "+tool, func() bool {
			r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err == nil && r.IsError && client.Refusal(r) == "UPSTREAM_UNAVAILABLE" {
				return false // still starting
			}
			if err != nil {
				t.Fatalf("%s %s: %v", server, tool, err)
			}
			res = r
			return true
		})
		return res
	}
	if r := call("memory", "create_entities", map[string]any{"entities": []any{map[string]any{"name": "w", "entityType": "t", "observations": []string{"o"}}}}); r.IsError {
		t.Fatalf("memory: %s", wardentest.ResultText(r))
	}
	if r := call("everything", "echo", map[string]any{"message": "hi"}); r.IsError || !strings.Contains(wardentest.ResultText(r), "hi") {
		t.Fatalf("everything echo: %s", wardentest.ResultText(r))
	}
	read := func(server, path string) *mcp.CallToolResult {
		return call(server, "read_text_file", map[string]any{"path": path})
	}
	if r := read("fs", filepath.Join(allowed, "note.txt")); r.IsError || !strings.Contains(wardentest.ResultText(r), "hello from allowed") {
		t.Fatalf("fs, allowed dir: %s", wardentest.ResultText(r))
	}
	if r := call("fs", "write_file", map[string]any{"path": filepath.Join(allowed, "new.txt"), "content": "x"}); r.IsError {
		t.Fatalf("fs, write in allowed dir: %s", wardentest.ResultText(r))
	}
	if r := read("fs", filepath.Join(other, "note.txt")); !r.IsError || strings.Contains(wardentest.ResultText(r), "hello") {
		t.Fatalf("fs read outside its sandbox's paths: %s", wardentest.ResultText(r))
	}
	if r := read("fsopen", filepath.Join(other, "note.txt")); r.IsError || !strings.Contains(wardentest.ResultText(r), "hello from other") {
		t.Fatalf("fsopen (no sandbox), other dir: %s", wardentest.ResultText(r))
	}
	var got map[string]isoOutcome
	if err := json.Unmarshal([]byte(wardentest.ResultText(call("offline", "attempt", map[string]any{}))), &got); err != nil {
		t.Fatal(err)
	}
	if o := got["api_with_stolen_token"]; o.OK || !strings.Contains(o.Detail, "connect") {
		t.Fatalf("a server without network reached Warden: %+v", o)
	}
}

// A server in a container ("sandbox": {"container": ...}) answers through
// Warden, sees only the paths its sandbox mounts, and has no network with
// "network": false. It needs a running container engine and a local image
// with a shell; where there is none the test says so and skips.
func TestContainerSandbox(t *testing.T) {
	const image = "busybox"
	var engine string
	for _, e := range []string{"docker", "podman"} {
		if exec.Command(e, "image", "inspect", image).Run() == nil {
			engine = e
			break
		}
	}
	if engine == "" {
		out, _ := exec.Command("docker", "info").CombinedOutput()
		t.Skipf("no container engine with the image %q runs on this machine (docker info: %s); "+
			"sandbox.TestInContainer checks the engine's command line instead", image, bytes.TrimSpace(out))
	}
	bin := testenv.BuildBinary(t, fixturePkg, "-tags", "netgo,osusergo") // static: it runs in busybox
	dir := t.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	isoStartAt(t, dir, listen, map[string]any{
		"boxed": map[string]any{"command": bin, "trusted": true,
			"sandbox": map[string]any{"network": false, "container": map[string]any{"image": image, "engine": engine},
				"paths": map[string]any{"read": []string{filepath.Dir(bin)}}}},
	})
	cs := wardentest.ConnectURL(t, "http://"+listen+"/mcp/boxed", nil, nil)
	wardentest.WaitFor(t, 60*time.Second, "the boxed server to answer", func() bool {
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"x": 1}})
		return err == nil && !r.IsError
	})
}

// When the launcher dies (killed here), the servers it started go with it,
// and Warden starts a new launcher for their next start: they come back
// and answer calls. Also as an ordinary user (when the tests run as root),
// for whom Warden, non-dumpable by then, must still write the new
// launcher's uid map.
func TestLauncherKilledStartsAgain(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/fixture-server")
	eachUser(t, []string{"self"}, built, func(t *testing.T, _, dir, fixture string, uid int) {
		w := isoStartAs(t, dir, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)),
			map[string]any{"s": map[string]any{"command": fixture, "trusted": true}}, uid)
		launcherKilled(t, w, fixture)
	})
}

// eachUser runs f as a subtest for each of modes and, when the tests run as
// root, once more as "unprivileged": as the user nobody, in a directory it
// may use, with bin copied there. f gets the directory, the binary and the
// uid to run Warden as (-1: the test's own).
func eachUser(t *testing.T, modes []string, bin string, f func(t *testing.T, mode, dir, bin string, uid int)) {
	if os.Geteuid() == 0 {
		modes = append(modes, "unprivileged")
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			dir, b, uid := t.TempDir(), bin, -1
			if mode == "unprivileged" {
				dir, uid = worldDir(t), nobody
				b = copyBinary(t, bin, filepath.Join(dir, filepath.Base(bin)))
			}
			f(t, mode, dir, b, uid)
		})
	}
}

func launcherKilled(t *testing.T, w *isoWarden, fixture string) {
	ready := func() bool {
		var s struct{ Connection struct{ State string } }
		w.api("GET", "/v1/servers/s", &s)
		return s.Connection.State == "ready"
	}
	// The launcher is Warden's child, the server the launcher's.
	tree := func() (launcher, server testenv.Proc) {
		for _, p := range testenv.Descendants(w.proc.PID()) {
			switch p.What {
			case w.proc.Cmd.Path:
				launcher = p
			case fixture:
				server = p
			}
		}
		return launcher, server
	}
	var launcher, server testenv.Proc
	wardentest.WaitFor(t, 20*time.Second, "s ready under a launcher", func() bool {
		launcher, server = tree()
		return ready() && launcher.PID != 0 && server.PID != 0
	})
	if err := syscall.Kill(launcher.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wardentest.WaitFor(t, 10*time.Second, "the server to go with its launcher", func() bool { return !server.Alive() })
	wardentest.WaitFor(t, 30*time.Second, "s ready again under a new launcher", func() bool {
		l, s := tree()
		return ready() && l.PID != 0 && l.PID != launcher.PID && s.PID != 0
	})
	cs := wardentest.ConnectURL(t, "http://"+w.listen+"/mcp/s", nil, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "back"}})
	if err != nil || res.IsError {
		t.Fatalf("call after the launcher came back: %v %+v", err, res)
	}
}
