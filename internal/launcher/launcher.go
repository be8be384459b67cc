// Package launcher is what a copy of Warden's binary does when Warden starts
// a stdio server through it (package sandbox builds the command): it
// confines itself as its Plan says and execs the server, or stays as the
// server's reaper.
//
// It runs from this package's init, before the rest of Warden is
// initialized, and pays for few of Warden's package inits because it
// imports only packages the runtime initializes early. The linker orders
// inits by import path among the packages whose imports are initialized,
// so importing strings, fmt, os/exec, encoding/json or golang.org/x/sys/unix
// here would let the SDK's, Prometheus' and protobuf's inits run first
// (about 70 inits instead of about 20; TestLauncherStopsBeforeWardensInit in
// e2e watches this). Hence own helpers for the little it needs of them, and
// the Linux constants in sys.go.
package launcher

import (
	"bytes"
	"errors"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
)

// Env carries the launcher's instructions (a Plan, encoded) in its
// environment; the launcher removes it before it execs the server.
const Env = "WARDEN_LAUNCH"

// lifelineFD is the launcher's copy of the lifeline's read end (ExtraFiles[0]).
const lifelineFD = 3

// init runs the launcher, when this process was started as one, before the
// rest of Warden is initialized.
func init() { maybeRun() }

// maybeRun runs the launcher and exits when this process was started as one.
func maybeRun() {
	spec, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	os.Exit(launch(spec, os.Args[1:]))
}

func launch(spec string, argv []string) int {
	p, err := decodePlan(spec)
	if err != nil {
		return fail("bad plan: " + err.Error())
	}
	env := withoutLaunchEnv(os.Environ())
	// Everything that follows sets per-thread state (no_new_privs,
	// capability bounding set, Landlock domain) that exec passes on from
	// this thread only.
	runtime.LockOSThread()
	// Warden's death kills a server in namespaces outright (the kernel
	// then kills the rest of its namespace); a reaper gets SIGTERM, to
	// kill its group first.
	deathSig := syscall.SIGKILL
	var sigs chan os.Signal
	if !p.Namespaces {
		deathSig = syscall.SIGTERM
		sigs = make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	}
	if err := prctl(prSetPdeathsig, uintptr(deathSig)); err != nil {
		return fail("parent-death signal: " + err.Error())
	}
	if wardenGone() {
		return 1
	}
	_ = syscall.Close(lifelineFD)
	if p.Namespaces {
		if err := confine(p); err != nil {
			return fail(err.Error())
		}
	}
	if p.Paths || (p.NoNetwork && !p.Namespaces) {
		if err := restrict(p); err != nil {
			return fail("landlock: " + err.Error())
		}
	}
	if err := prctl(prSetNoNewPrivs, 1); err != nil {
		return fail("no_new_privs: " + err.Error())
	}
	if p.Probe {
		return 0
	}
	if len(argv) == 0 {
		return fail("no command")
	}
	if p.Namespaces {
		return execServer(argv, env)
	}
	return reap(argv, env, sigs)
}

func fail(msg string) int {
	os.Stderr.WriteString("warden launcher: " + msg + "\n")
	return 126
}

// wardenGone reports whether Warden died before the parent-death signal was
// asked for: then the lifeline's write end is closed.
func wardenGone() bool {
	fds := []pollFd{{fd: lifelineFD, events: pollIn}}
	n, err := poll(fds)
	return err == nil && n > 0 && fds[0].revents&(pollHup|pollErr|pollNval) != 0
}

// confine hides Warden's files, mounts a /proc of the new PID namespace and
// drops every capability. It runs as root of a new user namespace, so the
// mounts it makes can't be undone by the server, which has no capability
// left in it.
func confine(p Plan) error {
	// Read before the new /proc is mounted: its first read of /proc/sys
	// costs more than the rest of the launcher's setup.
	last := lastCap()
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return errors.New("make mounts private: " + err.Error())
	}
	for _, dir := range p.Hide {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if err := syscall.Mount("warden-hidden", dir, "tmpfs", syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "size=4k,mode=0"); err != nil {
			return errors.New("hide " + dir + ": " + err.Error())
		}
	}
	for _, file := range p.HideFiles {
		if err := syscall.Mount("/dev/null", file, "", syscall.MS_BIND, ""); err != nil {
			return errors.New("hide " + file + ": " + err.Error())
		}
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return errors.New("mount a private /proc: " + err.Error())
	}
	if p.Dir != "" {
		// Enter the cwd again through the new mounts.
		if err := os.Chdir(p.Dir); err != nil {
			return err
		}
	}
	for c := 0; c <= last; c++ {
		if err := prctl(prCapbsetDrop, uintptr(c)); err != nil {
			return errors.New("drop capability " + strconv.Itoa(c) + ": " + err.Error())
		}
	}
	return prctl(prCapAmbient, prCapAmbientClearAll)
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if n, err2 := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && err2 == nil {
		return n
	}
	return capLastCap
}

// execServer replaces the launcher with the server, which becomes PID 1 of
// its namespace.
func execServer(argv, env []string) int {
	path, err := LookPath(argv[0], env)
	if err != nil {
		return fail(err.Error())
	}
	err = syscall.Exec(path, argv, env)
	os.Stderr.WriteString("exec " + argv[0] + ": " + err.Error() + "\n")
	return 127
}

// LookPath resolves name on the server's PATH (in env), not Warden's.
func LookPath(name string, env []string) (string, error) {
	if bytes.IndexByte([]byte(name), '/') >= 0 {
		return name, nil
	}
	for _, dir := range bytes.Split([]byte(EnvValue(env, "PATH")), []byte(":")) {
		if len(dir) == 0 {
			dir = []byte(".")
		}
		p := string(dir) + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("exec: " + strconv.Quote(name) + ": executable file not found in $PATH")
}

func withoutLaunchEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if _, ok := cutPrefix(kv, Env+"="); !ok {
			out = append(out, kv)
		}
	}
	return out
}

// EnvValue is name's value in env ("" when unset); the last setting wins.
func EnvValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := cutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// cutPrefix is strings.CutPrefix (see the package's doc).
func cutPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return s, false
	}
	return s[len(prefix):], true
}
