package sandbox

import (
	"golang.org/x/sys/unix"

	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEnv(t *testing.T) {
	own := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "USER=u", "WARDEN_STATE_DIR=/s", "WARDEN_CONFIG=/c",
		"OTHER_SECRET=x", "AWS_PROFILE=p", "TMPDIR=/t", "SHADOWED=old"}
	got := Env(own, []string{"AWS_PROFILE", "WARDEN_CONFIG"}, false, map[string]string{"SHADOWED": "new", "B": "2", "A": "1"})
	want := []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "USER=u", "AWS_PROFILE=p", "TMPDIR=/t", "A=1", "B=2", "SHADOWED=new"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q\nwant  %q", got, want)
	}
	// Everything but Warden's own variables with inheritEnv: true.
	got = Env(own, nil, true, nil)
	want = []string{"PATH=/bin", "HOME=/h", "LC_ALL=C", "USER=u", "OTHER_SECRET=x", "AWS_PROFILE=p", "TMPDIR=/t", "SHADOWED=old"}
	if !slices.Equal(got, want) {
		t.Errorf("Env(all) = %q\nwant       %q", got, want)
	}
}

func TestHidden(t *testing.T) {
	dir := t.TempDir()
	state, cfgDir, home := filepath.Join(dir, "state"), filepath.Join(dir, "cfg"), filepath.Join(dir, "home")
	for _, d := range []string{state, cfgDir, home + "/.ssh", home + "/.config/app", home + "/.config/chromium"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg, sibling := filepath.Join(cfgDir, "config.json"), filepath.Join(cfgDir, "notes.txt")
	for _, f := range []string{cfg, sibling, home + "/.netrc"} {
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l := &Launcher{hide: []string{state}, config: cfg}
	own := filepath.Join(state, "servers", "s")
	env := []string{"HOME=" + home}
	creds := []string{home + "/.config", home + "/.ssh"}
	for _, tc := range []struct {
		name                string
		spec                Spec
		env                 []string
		dirs, expose, files []string
	}{
		{"a dedicated config dir is hidden whole", Spec{Command: "srv"}, env,
			append([]string{state, cfgDir}, creds...), []string{own}, []string{home + "/.netrc"}},
		{"a config dir that is the cwd: its other entries shown", Spec{Command: "srv", Dir: cfgDir}, env,
			append([]string{state, cfgDir}, creds...), []string{cfgDir, sibling, own}, []string{home + "/.netrc"}},
		{"a config dir holding HOME: its other entries shown", Spec{Command: "srv"}, []string{"HOME=" + cfgDir + "/home"},
			[]string{state, cfgDir}, []string{sibling, own}, nil},
		{"a path in the args under the config dir", Spec{Command: "srv", Args: []string{"--data=" + cfgDir + "/d"}}, env,
			append([]string{state, cfgDir}, creds...), []string{cfgDir + "/d", sibling, own}, []string{home + "/.netrc"}},
		{"a script naming a path there", Spec{Command: "sh", Args: []string{"-c", "srv " + cfgDir + "/d; exit 0"}}, env,
			append([]string{state, cfgDir}, creds...), []string{sibling, own}, []string{home + "/.netrc"}},
		{"a sibling dir with the same prefix is not it", Spec{Command: "srv", Args: []string{cfgDir + "x/d"}}, env,
			append([]string{state, cfgDir}, creds...), []string{cfgDir + "x/d", own}, []string{home + "/.netrc"}},
		{"a config dir given to the server is shown in ~/.config", Spec{Command: "srv", Read: []string{home + "/.config/app"}}, env,
			append([]string{state, cfgDir}, creds...), []string{home + "/.config/app", own}, []string{home + "/.netrc"}},
	} {
		dirs, expose, files := l.hidden(tc.spec, tc.env, own)
		// Only this test's: the machine's own home has credentials too.
		notMine := func(p string) bool { return !within(p, dir) }
		dirs, expose, files = slices.DeleteFunc(dirs, notMine), slices.DeleteFunc(expose, notMine), slices.DeleteFunc(files, notMine)
		slices.Sort(dirs)
		want := slices.Sorted(slices.Values(tc.dirs))
		if !slices.Equal(dirs, want) || !slices.Equal(expose, tc.expose) || !slices.Equal(files, tc.files) {
			t.Errorf("%s: hidden = %q %q %q\nwant %q %q %q", tc.name, dirs, expose, files, want, tc.expose, tc.files)
		}
	}
	if _, err := l.Start(t.Context(), Spec{Name: "s", Command: "srv", Dir: filepath.Join(state, "x")}, nil, nil, nil); err == nil {
		t.Error("a cwd inside the state dir was accepted")
	}
}

// TCPCaller admits a connection held by this process (not one Warden
// started) and refuses one held by a child process (or its child), one whose
// sender closed its end, and one passed away in flight between processes.
func TestTCPCaller(t *testing.T) {
	ln := loopback(t)
	accept := func() net.Conn { return acceptOne(t, ln) }
	check := func(c net.Conn) error {
		return TCPCaller(c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr))
	}

	// This process's own connection.
	own, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if err := check(accept()); err != nil {
		t.Errorf("own connection: %v", err)
	}

	// A grandchild's.
	grandchildConnects(t, ln)
	if err := check(accept()); err != ErrSpawned {
		t.Errorf("grandchild's connection: %v, want ErrSpawned", err)
	}

	// One whose sender closed its end: nobody can be asked.
	gone, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := accept()
	gone.Close()
	if err := check(c); err != ErrPeerUnknown {
		t.Errorf("closed connection: %v, want ErrPeerUnknown", err)
	}

	// One in flight: sent over a socket pair and closed by its sender, so
	// that no process holds it while it is looked at.
	passed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c = accept()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pair[0])
	defer unix.Close(pair[1])
	f, _ := passed.(*net.TCPConn).File()
	if err := unix.Sendmsg(pair[0], []byte{0}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	passed.Close()
	if err := check(c); err != ErrPeerUnknown {
		t.Errorf("connection in flight: %v, want ErrPeerUnknown", err)
	}
}

// loopback listens on a loopback port until the test ends.
func loopback(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// grandchildConnects has a child's child connect to ln (bash opens it, in
// a subshell that is its child) and hold the connection until the test ends.
func grandchildConnects(t *testing.T, ln net.Listener) {
	t.Helper()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	child := exec.Command("bash", "-c", "( exec 3<>/dev/tcp/127.0.0.1/"+port+"; sleep 30 ) & wait")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
}

// ClientCaller admits an MCP client's connection held by this process (not
// one Warden started) and one whose sender closed its end; it refuses one
// a child's child holds.
func TestClientCaller(t *testing.T) {
	ln := loopback(t)
	check := func() error {
		c := acceptOne(t, ln)
		defer c.Close()
		return ClientCaller(c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr))
	}
	own, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if err := check(); err != nil {
		t.Errorf("own connection: %v", err)
	}
	gone, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := acceptOne(t, ln)
	gone.Close()
	if err := ClientCaller(c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)); err != nil {
		t.Errorf("closed connection: %v", err)
	}
	c.Close()
	grandchildConnects(t, ln)
	if err := check(); err != ErrServerClient {
		t.Errorf("grandchild's connection: %v, want ErrServerClient", err)
	}
}

// A holder that let go of the connection since the scan found it (a
// child forked between its fork and its exec, one that exited) is passed
// over; the connection is still admitted only by a holder that holds it
// when checked, and refused while one of Warden's children holds it.
func TestTCPCallerPassesOverHoldersThatLetGo(t *testing.T) {
	ln := loopback(t)
	own, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	c := acceptOne(t, ln)
	sock, found, err := peerSocket(c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr))
	if err != nil || !found {
		t.Fatalf("the connection's socket: %v, %v", found, err)
	}
	link := sock.link()
	start := func(files ...*os.File) *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.ExtraFiles = files
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	other := start() // holds nothing of this process's
	for _, tc := range []struct {
		name    string
		holders []int
		want    error
	}{
		{"this process, and a child that let go", []int{os.Getpid(), other.Process.Pid}, nil},
		{"this process, and one that exited", []int{done.Process.Pid, os.Getpid()}, nil},
		{"only a child that let go", []int{other.Process.Pid}, ErrPeerUnknown},
		{"none", nil, ErrPeerUnknown},
	} {
		if err := holdersAdmitted(tc.holders, link); err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	f, err := own.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	holding := start(f) // a child of "Warden" (this process) holding it
	f.Close()
	if err := holdersAdmitted([]int{os.Getpid(), holding.Process.Pid}, link); err != ErrSpawned {
		t.Errorf("this process and a child holding the connection: %v, want ErrSpawned", err)
	}
}

func TestInContainer(t *testing.T) {
	dir := t.TempDir()
	for _, e := range []string{"docker", "podman"} {
		if err := os.WriteFile(filepath.Join(dir, e), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := Spec{Command: "node", Args: []string{"server.js"}, Env: map[string]string{"TOKEN": "s3cret", "A": "1"},
		Dir: "/work", NoNetwork: true, Read: []string{"/data"}, Write: []string{"/out"},
		Container: &Container{Image: "node:22-slim"}}
	got, err := inContainer(spec, []string{"PATH=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"run", "--rm", "-i", "--init", "--network", "none", "-e", "A", "-e", "TOKEN",
		"-v", "/data:/data:ro", "-v", "/out:/out", "-w", "/work", "node:22-slim", "node", "server.js"}
	if got.Command != "docker" || !slices.Equal(got.Args, want) {
		t.Errorf("inContainer = %s %q\nwant docker %q", got.Command, got.Args, want)
	}
	if got.Env["TOKEN"] != "s3cret" || got.Paths || got.NoNetwork || got.Container != nil {
		t.Errorf("the client's spec: %+v", got)
	}
	spec.Container.Engine = "podman"
	if got, _ := inContainer(spec, []string{"PATH=" + dir}); got.Command != "podman" {
		t.Errorf("engine podman: %s", got.Command)
	}
	if _, err := inContainer(spec, []string{"PATH=" + t.TempDir()}); err == nil {
		t.Error("no engine installed, but no error")
	}
}

// BenchmarkTCPCaller is what the operator API's caller check, and the MCP
// endpoints' (client), cost per connection, with this machine's processes.
func BenchmarkTCPCaller(b *testing.B) {
	ln := loopback(b)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for name, check := range map[string]func(local, remote *net.TCPAddr) error{"operator": TCPCaller, "client": ClientCaller} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := check(s.LocalAddr().(*net.TCPAddr), s.RemoteAddr().(*net.TCPAddr)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// UnixCaller admits this process on a unix socket and refuses a child's
// connection, by the process the kernel recorded when it connected.
func TestUnixCaller(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accept := func() *net.UnixConn { return acceptOne(t, ln).(*net.UnixConn) }
	own, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if err := UnixCaller(accept()); err != nil {
		t.Errorf("own connection: %v", err)
	}
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "SANDBOX_TEST_DIAL="+path)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	if err := UnixCaller(accept()); err != ErrSpawned {
		t.Errorf("child's connection: %v, want ErrSpawned", err)
	}
}

// acceptOne accepts one connection within 10 s, closed when the test ends.
func acceptOne(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	ln.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A directory a server may write (its cwd, a write path) must not hold
// Warden's state dir, or the config's directory beneath it: the server
// could move either aside and put its own in its place. The config's
// directory itself may be its cwd (it is covered read-only).
func TestHoldsWarden(t *testing.T) {
	l := &Launcher{state: "/home/u/.local/state/warden", hide: []string{"/home/u/.local/state/warden"}, config: "/home/u/.config/warden/config.json"}
	for dir, refused := range map[string]bool{
		"/home/u": true, "/home/u/.local": true, "/home/u/.local/state/warden": true, "/home/u/.config": true,
		"/home/u/.config/warden": false, "/home/u/notes": false, "": false, "/home/u2": false,
	} {
		if err := l.holdsWarden(dir); (err != nil) != refused {
			t.Errorf("holdsWarden(%q) = %v, want refused %v", dir, err, refused)
		}
	}
	if _, err := l.confinement(Spec{Name: "s", Command: "srv", Write: []string{"/home/u"}}, nil); err == nil || !strings.Contains(err.Error(), "holds Warden's state dir") {
		t.Errorf("a write path holding the state dir: %v", err)
	}
}
