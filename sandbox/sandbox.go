// Package sandbox confines the stdio servers Warden starts. An MCP server is
// untrusted code: it must not reach Warden's state dir (operator token, store,
// other servers' logs), its config file, Warden's memory or environment, the
// operator API, or another server, and it must not outlive Warden.
//
// Warden starts one launcher (package launcher: a copy of its own binary,
// run from that package's init) in new user, mount and PID namespaces, and
// asks it over a socket pair to start each server. For each, the launcher
//
//  1. mounts an empty read-only tmpfs over the state dir and over the config
//     file's directory (or /dev/null over the file itself when that directory
//     holds what the server needs), in a mount namespace of the server's own;
//  2. drops every capability, sets no_new_privs and puts the server in a
//     Landlock domain of its own (with the rules of its "sandbox", if any);
//  3. starts it as PID 1 of a new PID namespace, under a /proc that shows
//     each process only to those allowed to trace it.
//
// So a server sees its own processes only; when it exits, the kernel kills
// what it left. When Warden dies, the launcher gets SIGKILL, and with it,
// PID 1 of the namespace all servers are in, every one of them.
//
// Where the kernel offers no user namespaces the launcher runs without them,
// as every server's subreaper, and kills each server's session when it exits
// and everything when Warden goes; servers then can read Warden's files, and
// NewLauncher says so.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/wardenmcp/warden/internal/launcher"
	"golang.org/x/sys/unix"
)

// Mode is how servers are confined.
type Mode int

const (
	// Namespaces starts servers in their own user, mount and PID namespaces.
	Namespaces Mode = iota
	// Reaper starts servers through a resident reaper, without namespaces.
	Reaper
	// Direct starts servers with their minimal environment and nothing
	// else: what Warden does without a binary to launch them with (when it
	// runs inside a test process).
	Direct
	// Off starts servers directly with Warden's whole environment (the
	// behaviour before isolation; for diagnosis and tests only).
	Off
)

func (m Mode) String() string {
	return [...]string{"namespaces", "reaper", "direct", "off"}[m]
}

// Confines reports whether m hides Warden's files from servers or keeps
// their processes from outliving it: then Warden also guards its operator
// API and memory against them.
func (m Mode) Confines() bool { return m == Namespaces || m == Reaper }

// Spec is one stdio server to start.
type Spec struct {
	Command string
	Args    []string
	Env     map[string]string // the server's configured env
	Dir     string            // working directory; "" for Warden's

	InheritEnv    []string // names passed on from Warden's environment (see Env)
	InheritAllEnv bool

	NoNetwork bool     // no network at all (own empty network namespace)
	Paths     bool     // file access limited to Read, Write and the system dirs
	Read      []string // read (and execute) access
	Write     []string // read and write access
	Container *Container
}

// Launcher starts stdio servers confined as its Mode says.
type Launcher struct {
	Mode   Mode
	self   string   // a binary that imports this package
	hide   []string // Warden's private directories: the state dir
	config string   // Warden's config file
	cwd    string   // a server's working directory unless it names one

	mu     sync.Mutex
	helper *helper // the resident launcher, in confining modes
	closed bool
}

// NewLauncher returns a launcher that runs servers through self (a binary
// that imports this package) and hides stateDir and configPath from them.
// In a confining mode it starts the resident launcher; when namespaces are
// not available it falls back to Reaper mode and returns why, for Warden to
// log as a warning. With mode Off it starts servers directly.
func NewLauncher(self, stateDir, configPath string, mode Mode) (*Launcher, error) {
	l := &Launcher{Mode: mode, self: self, config: configPath}
	l.cwd, _ = os.Getwd()
	if stateDir != "" {
		l.hide = []string{stateDir}
	}
	if self == "" && mode != Off {
		l.Mode = Direct
	}
	if !l.Mode.Confines() {
		return l, nil
	}
	var err error
	if l.helper, err = startHelper(self, l.Mode == Namespaces); err == nil {
		if launcher.LandlockABI() < 1 && l.Mode == Namespaces {
			return l, errors.New("this kernel offers no Landlock: stdio servers can see each other's processes and read their environment; enable the landlock LSM to keep them apart")
		}
		return l, nil
	}
	if l.Mode != Namespaces {
		return nil, err
	}
	l.Mode = Reaper
	if l.helper, err = startHelper(self, false); err != nil {
		return nil, err
	}
	return l, fmt.Errorf("stdio servers run without namespaces (%v): they can read Warden's state dir and config; "+
		"enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces>0) to confine them", err)
}

// Close stops the resident launcher, and with it any server still running;
// no server starts after it.
func (l *Launcher) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.helper != nil {
		l.helper.close()
	}
}

// running is the resident launcher, started again if it has gone (killed,
// say: its servers went with it, and start again through the new one).
func (l *Launcher) running() (*helper, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("no stdio server starts now: Warden is stopping")
	}
	if l.helper.lost() == nil {
		return l.helper, nil
	}
	h, err := startHelper(l.self, l.Mode == Namespaces)
	if err != nil {
		return nil, fmt.Errorf("the launcher of stdio servers has exited and could not start again: %w", err)
	}
	l.helper = h
	return h, nil
}

// Start starts spec as l's mode confines it (a nil l as Direct does), with
// the three files as its stdin, stdout and stderr (not files of Warden's
// state dir); the caller closes its copies.
func (l *Launcher) Start(ctx context.Context, spec Spec, stdin, stdout, stderr *os.File) (*Process, error) {
	if l == nil {
		l = &Launcher{Mode: Direct}
	}
	env := Env(os.Environ(), spec.InheritEnv, spec.InheritAllEnv, spec.Env)
	if l.Mode == Off { // Warden's whole environment, as before isolation
		env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
			env = append(env, k+"="+spec.Env[k])
		}
	}
	if spec.Container != nil {
		var err error
		if spec, err = inContainer(spec, env); err != nil {
			return nil, err
		}
	}
	if !l.Mode.Confines() {
		if spec.NoNetwork || spec.Paths {
			return nil, fmt.Errorf(`"sandbox" needs isolation, which is %s`, l.Mode)
		}
		return startDirect(spec, env, stdin, stdout, stderr)
	}
	ns := l.Mode == Namespaces
	if spec.NoNetwork && !ns && launcher.LandlockABI() < 4 {
		return nil, errors.New(`"sandbox": {"network": false} needs user namespaces or Landlock ABI 4, and this kernel has neither`)
	}
	if spec.Paths && launcher.LandlockABI() < 1 {
		return nil, errors.New(`"sandbox": {"paths": ...} needs Landlock, which this kernel does not offer`)
	}
	if spec.Dir != "" {
		for _, h := range l.hide {
			if within(spec.Dir, h) {
				return nil, fmt.Errorf("cwd %s is inside Warden's %s, which servers may not see; choose another cwd", spec.Dir, h)
			}
		}
	}
	// Without a cwd of its own, a server starts in Warden's, entered
	// through its mounts: inside a hidden directory, an empty one.
	spec.Dir = cmp.Or(spec.Dir, l.cwd)
	s := launcher.Start{Argv: append([]string{spec.Command}, spec.Args...), Env: env, Dir: spec.Dir,
		NoNetwork: spec.NoNetwork, Paths: spec.Paths, Read: spec.Read, Write: spec.Write}
	if ns {
		s.Hide, s.HideFiles = l.hidden(spec, env)
	}
	h, err := l.running()
	if err != nil {
		return nil, err
	}
	return h.start(ctx, s, stdin, stdout, stderr)
}

// startDirect starts spec without the launcher, with env and the
// parent-death signal, but nothing hidden and no grandchild killed when
// Warden dies.
func startDirect(spec Spec, env []string, stdin, stdout, stderr *os.File) (*Process, error) {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Env = env
	cmd.Dir = spec.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pgid := -cmd.Process.Pid
	p := newProcess(func(sig syscall.Signal) error { return syscall.Kill(pgid, sig) })
	go func() { p.exit(cmd.Wait()) }()
	return p, nil
}

// hidden picks what to hide from a server: the state dir, and the config
// file's directory unless that directory holds what the server needs (its
// cwd, HOME, TMPDIR, its sandbox paths, a path its command or args name),
// in which case only the file. A file is hidden by a mount on its name, which an edit that
// replaces the file (rename) undoes for servers started before it; a
// directory stays hidden.
func (l *Launcher) hidden(spec Spec, env []string) (dirs, files []string) {
	dirs = slices.Clone(l.hide)
	if l.config == "" {
		return dirs, nil
	}
	if _, err := os.Stat(l.config); err != nil {
		return dirs, nil
	}
	cdir := filepath.Dir(l.config)
	needed := []string{spec.Dir, launcher.EnvValue(env, "HOME"), launcher.EnvValue(env, "TMPDIR"), os.TempDir()}
	needed = append(needed, spec.Read...)
	needed = append(needed, spec.Write...)
	for _, n := range needed {
		if n != "" && within(n, cdir) {
			return dirs, []string{l.config}
		}
	}
	// An arg that names a path there ("/d/x", "--data=/d/x", "sh -c '... /d/x'").
	for _, a := range append([]string{spec.Command}, spec.Args...) {
		if strings.Contains(a, cdir+"/") || strings.HasSuffix(a, cdir) {
			return dirs, []string{l.config}
		}
	}
	for _, d := range dirs {
		if within(cdir, d) {
			return dirs, nil // already hidden with the state dir
		}
	}
	return append(dirs, cdir), nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// ProtectSelf makes this process non-dumpable, so that processes of the same
// user (a server that escaped, say) can't read its memory or
// /proc/PID/environ, and it writes no core dump holding secrets.
func ProtectSelf() error {
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// PID is the resident launcher's process ID; 0 in modes without one (and
// for a nil l, which starts servers as Direct does).
func (l *Launcher) PID() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.helper == nil {
		return 0
	}
	return l.helper.cmd.Process.Pid
}
