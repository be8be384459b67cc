// Package launcher is what a copy of Warden's binary does as Warden's one
// launcher: a resident process that starts every stdio server, confined,
// on Warden's request (package sandbox starts it and talks to it).
//
// Warden starts it once, in new user, mount and PID namespaces, with a
// control socket (a socket pair) as fd 3. Set up, it serves requests on
// that socket: "start" a server with its three stdio files, "signal" its
// process group; it answers with the server's start and, later, its exit.
// Each server is started from an OS thread of its own, which first gives
// itself a mount namespace with Warden's files hidden, drops its
// capabilities, sets no_new_privs and enters a Landlock domain of its own;
// the server inherits that thread's state and becomes PID 1 of a new PID
// namespace. So a server sees none of Warden's files, cannot signal or see
// any process but its own, and leaves no process behind when it exits.
//
// Nothing outlives Warden: the launcher gets SIGKILL when Warden dies (and
// stops when the control socket closes), and as PID 1 of its namespace its
// death kills every server and their children. Where the kernel offers no
// user namespaces, it runs without them as every server's subreaper, and
// kills what is left when Warden goes.
//
// It runs from this package's init, before the rest of Warden is
// initialized, and pays for few of Warden's package inits because it
// imports only packages the runtime initializes early. The linker orders
// inits by import path among the packages whose imports are initialized,
// so importing strings, fmt, os/exec, encoding/json or golang.org/x/sys/unix
// here would let the SDK's, Prometheus' and protobuf's inits run first
// (TestLauncherStopsBeforeWardensInit in e2e watches this). Hence own
// helpers for the little it needs of them, and the Linux constants in
// sys.go.
package launcher

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// Env carries the launcher's Plan in its environment.
const Env = "WARDEN_LAUNCH"

// ControlFD is the launcher's end of the control socket (ExtraFiles[0]).
const ControlFD = 3

// init runs the launcher, when this process was started as one, before the
// rest of Warden is initialized.
func init() {
	spec, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	os.Exit(run(spec))
}

func run(spec string) int {
	p, err := decodePlan(spec)
	if err != nil {
		return fail("bad plan: " + err.Error())
	}
	// No server may hold the control socket, nor any file Warden got
	// from whoever started it and passed on without meaning to.
	cloexecFrom(ControlFD)
	if p.Namespaces {
		// Warden's death kills the launcher, and the kernel then every
		// process of its namespace.
		if err := prctl(prSetPdeathsig, uintptr(syscall.SIGKILL)); err != nil {
			return fail("parent-death signal: " + err.Error())
		}
		if err := mountProc(); err != nil {
			return fail(err.Error())
		}
	} else if err := prctl(prSetChildSubreaper, 1); err != nil {
		return fail("subreaper: " + err.Error())
	}
	// The launcher holds every server's environment for a moment.
	if err := prctl(prSetDumpable, 0); err != nil {
		return fail("dumpable: " + err.Error())
	}
	return serve(p)
}

func fail(msg string) int {
	os.Stderr.WriteString("warden launcher: " + msg + "\n")
	return 126
}

// mountProc makes mounts private to the launcher's namespace and mounts a
// /proc of its PID namespace that shows a process only to those allowed to
// trace it: a server sees its own processes, not the launcher or another
// server (each is in a Landlock domain of its own). The group exempted from
// that (gid=, root's by default, which a server of Warden run as root is
// in) is one no process has: unmapped in the namespace.
func mountProc() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return errors.New("make mounts private: " + err.Error())
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "hidepid=2,gid=4294967294"); err != nil {
		return errors.New("mount a private /proc: " + err.Error())
	}
	return nil
}

// confine gives this thread a mount namespace of its own with s's hidden
// paths covered, and drops every capability from its bounding set. It runs
// on the thread that starts the server; the mounts are made as root of the
// launcher's user namespace, so the server, with no capability there,
// can't undo them.
func (l *launcher) confine(s Start) error {
	if err := syscall.Unshare(syscall.CLONE_FS | syscall.CLONE_NEWNS); err != nil {
		return errors.New("own mount namespace: " + err.Error())
	}
	for _, dir := range s.Hide {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if err := cover(dir, s.Expose); err != nil {
			return errors.New("hide " + dir + ": " + err.Error())
		}
	}
	for _, file := range s.HideFiles {
		if err := syscall.Mount("/dev/null", file, "", syscall.MS_BIND, ""); err != nil {
			return errors.New("hide " + file + ": " + err.Error())
		}
	}
	for c := 0; c <= l.lastCap; c++ {
		if err := prctl(prCapbsetDrop, uintptr(c)); err != nil {
			return errors.New("drop capability " + strconv.Itoa(c) + ": " + err.Error())
		}
	}
	return nil
}

// hiddenFlags are a cover's: read-only, nothing to run or open as a device.
const hiddenFlags = syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC

// cover mounts an empty tmpfs over dir, read-only, and shows again those
// of expose that lie beneath it: each bound at its place (a link made
// again), opened before the cover hides it. A new file renamed into dir
// later (an editor saving the config there) stays out of sight, where a
// mount on the file's own name would go with the name. The server, of
// the tmpfs's owner but without capabilities, can't change it: it is
// read-only by the time the server runs.
func cover(dir string, expose []string) error {
	type shown struct {
		path, link string
		f          *os.File
		dir        bool
	}
	var show []shown
	defer func() {
		for _, s := range show {
			if s.f != nil {
				s.f.Close()
			}
		}
	}()
	for _, p := range expose {
		if p == dir || !under(p, dir) {
			continue
		}
		f, err := os.OpenFile(p, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue // gone: nothing to show
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		s := shown{path: p, f: f, dir: fi.IsDir()}
		if fi.Mode()&os.ModeSymlink != 0 {
			f.Close()
			s.f = nil
			if s.link, err = os.Readlink(p); err != nil {
				continue
			}
		}
		show = append(show, s)
	}
	if len(show) == 0 && !slices.Contains(expose, dir) {
		return syscall.Mount("warden-hidden", dir, "tmpfs", hiddenFlags, "size=4k,mode=0")
	}
	// A cover the server works in (its cwd, say) can be entered and listed:
	// it holds only what is shown again.
	if err := syscall.Mount("warden-hidden", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "size=64k,mode=0755"); err != nil {
		return err
	}
	for _, s := range show {
		if err := os.MkdirAll(parentDir(s.path), 0o711); err != nil {
			return err
		}
		var err error
		switch {
		case s.f == nil:
			err = os.Symlink(s.link, s.path)
		case s.dir:
			err = os.Mkdir(s.path, 0)
		default:
			var f *os.File
			if f, err = os.OpenFile(s.path, os.O_CREATE|os.O_EXCL|syscall.O_CLOEXEC, 0); err == nil {
				f.Close()
			}
		}
		if err == nil && s.f != nil {
			err = syscall.Mount("/proc/self/fd/"+strconv.Itoa(int(s.f.Fd())), s.path, "", syscall.MS_BIND|syscall.MS_REC, "")
		}
		if err != nil && !os.IsExist(err) {
			return errors.New("show " + s.path + ": " + err.Error())
		}
	}
	return syscall.Mount("", dir, "", syscall.MS_REMOUNT|hiddenFlags, "")
}

// under reports whether path lies strictly beneath dir (both clean).
func under(path, dir string) bool {
	if dir == "/" {
		return len(path) > 1 && path[0] == '/'
	}
	return len(path) > len(dir) && path[:len(dir)] == dir && path[len(dir)] == '/'
}

// parentDir is filepath.Dir for a clean absolute path (see the package's doc).
func parentDir(path string) string {
	for i := len(path) - 1; i > 0; i-- {
		if path[i] == '/' {
			return path[:i]
		}
	}
	return "/"
}

// readLastCap is the highest capability this kernel knows.
func readLastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if n, err2 := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && err2 == nil {
		return n
	}
	return capLastCap
}

// cloexecFrom marks every file descriptor from fd on close-on-exec.
func cloexecFrom(fd int) {
	if _, _, errno := syscall.Syscall(sysCloseRange, uintptr(fd), ^uintptr(0)>>1, closeRangeCloexec); errno == 0 {
		return
	}
	entries, _ := os.ReadDir("/proc/self/fd") // kernels before 5.11
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= fd {
			syscall.CloseOnExec(n)
		}
	}
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
