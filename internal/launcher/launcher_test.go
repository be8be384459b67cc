package launcher

import (
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// The launcher is a process of its own: the tests start this test binary
// as one, with a control socket as fd 3, and play Warden on the other end
// (sandbox's helper is the real Warden side).

// testLaunchEnv starts this binary as the launcher from TestMain. Env does
// too, from the package's init, which is the real path (see
// TestInitRunsTheLauncher); a launcher run from init exits before the
// coverage counters are set up, so the other tests come through TestMain,
// which runs the same run.
const testLaunchEnv = "WARDEN_TEST_LAUNCH"

// TestMain runs the launcher when a test started this binary as one, else
// the tests.
func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(testLaunchEnv); ok {
		os.Exit(run(spec))
	}
	os.Exit(m.Run())
}

// control is Warden's end of a launcher started by startLauncher.
type control struct {
	t      *testing.T
	fd     int
	msgs   chan Msg // what the launcher sent, in order; closed when its end closed
	stderr *testenv.Buffer
	exited chan struct{}
	state  *os.ProcessState
	closed bool
}

// startLauncher starts this binary as a launcher with plan p, through the
// environment variable env (Env or testLaunchEnv), as sandbox's helper
// does: in new user, mount and PID namespaces for a plan with them. It is
// stopped, by closing the control socket, when the test ends.
func startLauncher(t *testing.T, env string, p Plan) *control {
	t.Helper()
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	theirs := os.NewFile(uintptr(pair[1]), "launcher control")
	c := &control{t: t, fd: pair[0], msgs: make(chan Msg, 16), stderr: &testenv.Buffer{}, exited: make(chan struct{})}
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{env + "=" + p.Encode(), "PATH=" + os.Getenv("PATH")}
	if f := flag.Lookup("test.gocoverdir"); f != nil && f.Value.String() != "" {
		cmd.Env = append(cmd.Env, "GOCOVERDIR="+f.Value.String()) // its counters count
	}
	cmd.Dir = "/"
	cmd.Stderr = c.stderr
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.Namespaces {
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		const capSysAdmin, capSetpcap = 21, 8
		cmd.SysProcAttr.AmbientCaps = []uintptr{capSysAdmin, capSetpcap}
	}
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		syscall.Close(c.fd)
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.exited)
	}()
	go func() {
		defer close(c.msgs)
		defer syscall.Close(c.fd)
		for {
			m, files, err := receive(c.fd)
			for _, fd := range files {
				syscall.Close(fd)
			}
			if err != nil {
				return
			}
			c.msgs <- m
		}
	}()
	t.Cleanup(func() {
		c.close()
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("the launcher did not stop when its control socket closed\n%s", c.stderr)
		}
	})
	return c
}

// next is the launcher's next message.
func (c *control) next() Msg {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			c.t.Fatalf("the control socket closed\n%s", c.stderr)
		}
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatalf("no message from the launcher in 10s\n%s", c.stderr)
	}
	return Msg{}
}

// expect reads the next message and fails unless it is of kind and id.
func (c *control) expect(kind string, id uint64) Msg {
	c.t.Helper()
	m := c.next()
	if m.Kind != kind || m.ID != id {
		c.t.Fatalf("the launcher said %+v, want %s of %d\n%s", m, kind, id, c.stderr)
	}
	return m
}

// send sends m with files attached.
func (c *control) send(m Msg, files ...*os.File) {
	c.t.Helper()
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	if err := syscall.Sendmsg(c.fd, Frame(m.Encode()), oob, nil, 0); err != nil {
		c.t.Fatalf("send %s: %v", m.Kind, err)
	}
}

// close closes Warden's end, as Warden's exit does. (A shutdown: a close
// would wait for the reader's recvmsg; the reader closes the fd.)
func (c *control) close() {
	if !c.closed {
		c.closed = true
		syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	}
}

// server is a started server's stdio, as Warden holds it.
type server struct {
	stdin          io.WriteCloser
	stdout, stderr io.ReadCloser
}

// start asks for s as server id with fresh pipes for its stdio.
func (c *control) start(id uint64, s Start) *server {
	c.t.Helper()
	var ours, theirs [3]*os.File
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			c.t.Fatal(err)
		}
		if i == 0 {
			ours[i], theirs[i] = w, r
		} else {
			ours[i], theirs[i] = r, w
		}
		c.t.Cleanup(func() { ours[i].Close() })
	}
	c.send(Msg{Kind: "start", ID: id, Start: s}, theirs[:]...)
	for _, f := range theirs {
		f.Close()
	}
	return &server{stdin: ours[0], stdout: ours[1], stderr: ours[2]}
}

// sh is a server running script with sh, able to run and read /.
func sh(script string) Start {
	return Start{Argv: []string{"sh", "-c", script}, Env: []string{"PATH=" + os.Getenv("PATH")}, BaseRead: []string{"/"}}
}

// readAll reads a server's output to its end.
func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var plans = []struct {
	name string
	plan Plan
}{{"namespaces", Plan{Namespaces: true}}, {"subreaper", Plan{}}}

// Started with WARDEN_LAUNCH, Warden's binary is the launcher from its
// init on: it says ready on the control socket, and stops when the socket
// closes. A plan it cannot read is refused with exit status 126.
func TestInitRunsTheLauncher(t *testing.T) {
	c := startLauncher(t, Env, Plan{})
	c.expect("ready", 0)
	c.close()
	<-c.exited
	if !c.state.Success() {
		t.Fatalf("the launcher exited %v after its socket closed\n%s", c.state, c.stderr)
	}

	bad := exec.Command(os.Args[0])
	bad.Env = []string{Env + "=nonsense"}
	out, err := bad.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 126 || !strings.Contains(string(out), "warden launcher: bad plan") {
		t.Fatalf("a bad plan: %v %q, want exit 126 saying so", err, out)
	}
}

// A server gets its three files and its environment, starts in its
// directory, and its exit status comes back after "started".
func TestServerRuns(t *testing.T) {
	for _, p := range plans {
		t.Run(p.name, func(t *testing.T) {
			c := startLauncher(t, testLaunchEnv, p.plan)
			c.expect("ready", 0)
			dir := t.TempDir()
			s := sh(`echo "in $(pwd) as $GREETING"; echo to-stderr >&2; read line; echo "got $line"; exit 3`)
			s.Env = append(s.Env, "GREETING=hello")
			s.Dir, s.Own = dir, []string{dir}
			srv := c.start(7, s)
			c.expect("started", 7)
			io.WriteString(srv.stdin, "a line\n")
			if out := readAll(t, srv.stdout); out != "in "+dir+" as hello\ngot a line\n" {
				t.Errorf("stdout %q", out)
			}
			if errOut := readAll(t, srv.stderr); errOut != "to-stderr\n" {
				t.Errorf("stderr %q", errOut)
			}
			if ws := syscall.WaitStatus(c.expect("exited", 7).Status); !ws.Exited() || ws.ExitStatus() != 3 {
				t.Errorf("exit status %v, want 3", ws)
			}
		})
	}
}

// A start that cannot be made is answered "failed" with why.
func TestStartFailures(t *testing.T) {
	c := startLauncher(t, testLaunchEnv, Plan{})
	c.expect("ready", 0)
	missing := sh("")
	missing.Argv = []string{"no-such-command-5e1f"}
	nodir := sh("true")
	nodir.Dir = "/no/such/dir"
	for i, tc := range []struct {
		name  string
		start Start
		files int
		want  string
	}{
		{"a missing command", missing, 3, `exec: "no-such-command-5e1f": executable file not found in $PATH`},
		{"a missing directory", nodir, 3, "cwd /no/such/dir"},
		{"no files", sh("true"), 0, "a start needs a command and three files"},
		{"no command", Start{}, 3, "a start needs a command and three files"},
	} {
		id := uint64(i + 1)
		if tc.files == 3 {
			c.start(id, tc.start)
		} else {
			c.send(Msg{Kind: "start", ID: id, Start: tc.start})
		}
		if m := c.expect("failed", id); !strings.Contains(m.Error, tc.want) {
			t.Errorf("%s: failed with %q, want %q", tc.name, m.Error, tc.want)
		}
	}
}

// A signal goes to the server's process group, and its death comes back
// as its exit. (In namespaces the server is PID 1 of its own, which takes
// from outside only the signals it handles, and SIGKILL.)
func TestSignal(t *testing.T) {
	for _, p := range plans {
		t.Run(p.name, func(t *testing.T) {
			sig := syscall.SIGTERM
			if p.plan.Namespaces {
				sig = syscall.SIGKILL
			}
			c := startLauncher(t, testLaunchEnv, p.plan)
			c.expect("ready", 0)
			srv := c.start(1, sh("echo up; exec sleep 300"))
			c.expect("started", 1)
			if line := make([]byte, 3); !readLine(srv.stdout, line) {
				t.Fatal("the server did not start")
			}
			c.send(Msg{Kind: "signal", ID: 1, Signal: int(sig)})
			if ws := syscall.WaitStatus(c.expect("exited", 1).Status); !ws.Signaled() || ws.Signal() != sig {
				t.Fatalf("exit status %v, want killed by %v", ws, sig)
			}
		})
	}
}

// readLine reads len(b) bytes of a server's first output.
func readLine(r io.Reader, b []byte) bool {
	_, err := io.ReadFull(r, b)
	return err == nil
}

// When Warden goes (its end of the control socket closes), the launcher
// ends every server and what they started, even what ignores SIGTERM or
// left the server's session, and then itself.
func TestWardensEndEndsEveryServer(t *testing.T) {
	for _, p := range plans {
		t.Run(p.name, func(t *testing.T) {
			c := startLauncher(t, testLaunchEnv, p.plan)
			c.expect("ready", 0)
			srv := c.start(1, sh(`trap "" TERM; setsid sleep 300 & echo "$! $$"; sleep 300`))
			c.expect("started", 1)
			var line [64]byte
			n, err := srv.stdout.Read(line[:])
			if err != nil {
				t.Fatal(err)
			}
			pids := strings.Fields(string(line[:n])) // as the server's namespace numbers them
			if len(pids) != 2 {
				t.Fatalf("the server said %q", line[:n])
			}
			host := hostPIDs(t, c)
			c.close()
			select {
			case <-c.exited:
			case <-time.After(10 * time.Second):
				t.Fatalf("the launcher did not stop\n%s", c.stderr)
			}
			for _, pid := range host {
				if !testenv.Poll(5*time.Second, func() bool { return gone(pid) }) {
					t.Errorf("process %d outlived the launcher", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// hostPIDs are the processes below the launcher, as this process sees
// them, once there are the three the server makes: itself, its sleep and
// the one that left its session.
func hostPIDs(t *testing.T, c *control) []int {
	t.Helper()
	var launcherPID int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parent, _, err := Stat(pid); err == nil && parent == os.Getpid() {
			if cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); strings.HasPrefix(string(cmd), os.Args[0]) {
				launcherPID = pid
			}
		}
	}
	var out []int
	testenv.Poll(5*time.Second, func() bool {
		out = out[:0]
		for pid, st := range processes() {
			if descends(pid, launcherPID, st) {
				out = append(out, pid)
			}
		}
		return len(out) >= 3
	})
	if launcherPID == 0 || len(out) < 3 {
		t.Fatalf("found %d processes below launcher %d\n%s", len(out), launcherPID, c.stderr)
	}
	return out
}

// descends reports whether pid's ancestry reaches root.
func descends(pid, root int, st procStat) bool {
	for range 64 {
		if st.parent == root {
			return true
		}
		parent, session, err := Stat(st.parent)
		if err != nil || st.parent <= 1 {
			return false
		}
		st = procStat{parent: parent, session: session}
	}
	return false
}

// gone reports whether pid has ended (or is a zombie about to be reaped).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && strings.HasPrefix(string(b[i:]), ") Z")
}

// In namespaces a server sees none of what Warden hides: a hidden
// directory is an empty read-only cover but for what is exposed in it, a
// hidden file reads empty, and no capability is left to undo it.
func TestServerSeesNothingHidden(t *testing.T) {
	c := startLauncher(t, testLaunchEnv, Plan{Namespaces: true})
	c.expect("ready", 0)
	state := t.TempDir()
	for _, f := range []string{"api-token", "servers/a/kept"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(state, f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(state, f), []byte("secret "+f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(config, []byte(`{"secret": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := sh(`cat "$1/api-token"; echo "ls: $(ls "$1")"; cat "$1/servers/a/kept"; echo; echo "config: $(cat "$2")"; touch "$1/new" || echo "read-only"; grep CapEff /proc/self/status`)
	s.Argv = append(s.Argv, "sh", state, config)
	s.Hide, s.Expose, s.HideFiles = []string{state}, []string{filepath.Join(state, "servers", "a")}, []string{config}
	srv := c.start(1, s)
	c.expect("started", 1)
	out := readAll(t, srv.stdout)
	for _, want := range []string{"ls: servers", "secret servers/a/kept", "config: \n", "read-only", "CapEff:\t0000000000000000"} {
		if !strings.Contains(out, want) {
			t.Errorf("the server's view lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret api-token") || strings.Contains(out, `{"secret": 1}`) {
		t.Errorf("the server read what is hidden:\n%s", out)
	}
	c.expect("exited", 1)
}

// With paths, Landlock lets a server read the system's directories and
// its read paths, and write only its write paths.
func TestPathsConfineTheServer(t *testing.T) {
	c := startLauncher(t, testLaunchEnv, Plan{})
	c.expect("ready", 0)
	read, write, other := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(read, "in"), []byte("readable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "in"), []byte("private\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sh(`cat "$1/in"; echo w > "$2/out" && echo wrote; cat "$3/in" || echo "no read"; echo x > "$3/out" || echo "no write"`)
	s.Argv = append(s.Argv, "sh", read, write, other)
	s.Paths, s.Read, s.Write, s.BaseRead = true, []string{read}, []string{write}, nil
	srv := c.start(1, s)
	c.expect("started", 1)
	if out := readAll(t, srv.stdout); out != "readable\nwrote\nno read\nno write\n" {
		t.Fatalf("the confined server printed %q", out)
	}
	c.expect("exited", 1)
	if _, err := os.Stat(filepath.Join(other, "out")); err == nil {
		t.Fatal("the server wrote outside its write paths")
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(write, link); err != nil {
		t.Fatal(err)
	}
	s.Write = []string{link}
	c.start(2, s)
	if m := c.expect("failed", 2); !strings.Contains(m.Error, "symbolic link") {
		t.Fatalf("a write path through a link: %q, want a refusal naming the link", m.Error)
	}
}
