// Package sandbox confines the stdio servers Warden starts. An MCP server is
// untrusted code: it must not reach Warden's state dir (operator token, store,
// other servers' logs), its config file, Warden's memory or environment, or
// the operator API, and it must not outlive Warden.
//
// Warden starts every stdio server through a copy of its own binary, the
// launcher (package launcher, run from its init), in new user, mount and PID
// namespaces. Before it execs the server, the launcher
//
//  1. asks for SIGKILL when Warden dies and checks Warden's lifeline pipe;
//  2. mounts an empty read-only tmpfs over the state dir and over the config
//     file's directory (or /dev/null over the file itself when that directory
//     holds what the server needs), and a /proc of its own PID namespace, so
//     no process outside it is visible;
//  3. applies a Landlock ruleset when the server's "sandbox" names paths;
//  4. drops every capability and sets no_new_privs.
//
// The server becomes PID 1 of its namespace: when it exits, or when Warden's
// death kills it, the kernel kills every process left in the namespace, so no
// grandchild survives in any order of exits. No launcher stays resident.
//
// Where the kernel offers no user namespaces the launcher stays as a reaper
// (a subreaper that kills its process group and every orphan it adopted when
// the server exits or Warden dies); servers then can read Warden's files, and
// NewLauncher says so.
package sandbox

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	// The lifeline is a pipe whose write end only Warden holds (it is
	// close-on-exec): a launcher that finds it closed knows Warden died
	// before it could ask the kernel for a signal.
	lifeR, lifeW *os.File
}

// NewLauncher returns a launcher that runs servers through self (a binary
// that imports this package) and hides stateDir and configPath from them.
// It probes the kernel once; when namespaces are not available it
// falls back to Reaper mode and returns why, for Warden to log as a warning.
// With mode Off it starts servers directly and probes nothing.
func NewLauncher(self, stateDir, configPath string, mode Mode) (*Launcher, error) {
	l := &Launcher{Mode: mode, self: self, config: configPath}
	if stateDir != "" {
		l.hide = []string{stateDir}
	}
	if self == "" && mode != Off {
		l.Mode = Direct
	}
	if !l.Mode.Confines() {
		return l, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	l.lifeR, l.lifeW = r, w
	if mode == Namespaces {
		if err := l.probe(); err != nil {
			l.Mode = Reaper
			return l, fmt.Errorf("stdio servers run without namespaces (%v): they can read Warden's state dir and config; "+
				"enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces>0) to confine them", err)
		}
	}
	return l, nil
}

// Close releases the lifeline, when Warden stops; no server starts after it.
func (l *Launcher) Close() {
	if l.lifeW != nil {
		l.lifeW.Close()
		l.lifeR.Close()
	}
}

// probe starts a launcher that sets up everything a server would get and
// exits, so a kernel that refuses any of it is found at start, not at each
// server's start.
func (l *Launcher) probe() error {
	cmd, err := l.command(Spec{}, true)
	if err != nil {
		return err
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if msg := strings.TrimSpace(string(out)); msg != "" {
			return errors.New(msg)
		}
		return err
	}
	return nil
}

// Command returns the command that starts spec as l's mode confines it (a
// nil l as Direct does). The caller sets Stdin, Stdout and Stderr (not as
// files of Warden's state dir) and starts it.
func (l *Launcher) Command(spec Spec) (*exec.Cmd, error) {
	if l == nil {
		l = &Launcher{Mode: Direct}
	}
	return l.command(spec, false)
}

// startDirect returns the command that starts spec without a launcher,
// with env and the parent-death signal, but nothing hidden and no
// grandchild killed when Warden dies.
func startDirect(spec Spec, env []string) *exec.Cmd {
	cmd := exec.Command(spec.Command, spec.Args...)
	cmd.Env = env
	cmd.Dir = spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (l *Launcher) command(spec Spec, probe bool) (*exec.Cmd, error) {
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
		return startDirect(spec, env), nil
	}
	p := launcher.Plan{Namespaces: l.Mode == Namespaces, Dir: spec.Dir, NoNetwork: spec.NoNetwork,
		Paths: spec.Paths, Read: spec.Read, Write: spec.Write, Probe: probe}
	if p.NoNetwork && !p.Namespaces && launcher.LandlockABI() < 4 {
		return nil, errors.New(`"sandbox": {"network": false} needs user namespaces or Landlock ABI 4, and this kernel has neither`)
	}
	if p.Paths && launcher.LandlockABI() < 1 {
		return nil, errors.New(`"sandbox": {"paths": ...} needs Landlock, which this kernel does not offer`)
	}
	if p.Namespaces {
		p.Hide, p.HideFiles = l.hidden(spec, env)
	}
	if spec.Dir != "" {
		for _, h := range l.hide {
			if within(spec.Dir, h) {
				return nil, fmt.Errorf("cwd %s is inside Warden's %s, which servers may not see; choose another cwd", spec.Dir, h)
			}
		}
	}
	cmd := exec.Command(l.self, append([]string{spec.Command}, spec.Args...)...)
	cmd.Env = append(env, launcher.Env+"="+p.Encode())
	cmd.Dir = spec.Dir
	cmd.ExtraFiles = []*os.File{l.lifeR}
	// The launcher asks for its parent-death signal itself: Go's check
	// after setting one compares the parent's PID, which reads 0 in a new
	// PID namespace, and would kill the launcher at once.
	attr := &syscall.SysProcAttr{Setpgid: true}
	if p.Namespaces {
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
		if spec.NoNetwork {
			attr.Cloneflags |= syscall.CLONE_NEWNET
		}
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	cmd.SysProcAttr = attr
	return cmd, nil
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
