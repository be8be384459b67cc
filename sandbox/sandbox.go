// Package sandbox confines the stdio servers Warden starts. An MCP server is
// untrusted code: it must not reach Warden's state dir (operator token, store,
// other servers' logs), its config file, Warden's memory or environment, the
// operator API, or another server, and it must not outlive Warden.
//
// Warden starts one launcher (package launcher: a copy of its own binary,
// run from that package's init) in new user, mount and PID namespaces, and
// asks it over a socket pair to start each server. For each, the launcher
//
//  1. mounts a read-only tmpfs over the state dir (showing the server's
//     own places in it), the config file's directory (showing its other
//     entries when the server needs them) and the credential stores of the
//     home, in a mount namespace of the server's own;
//  2. drops every capability, sets no_new_privs and puts the server in a
//     Landlock domain of its own, where it writes only its own places, its
//     cwd and what its "sandbox" adds;
//  3. starts it as PID 1 of a new PID namespace, under a /proc that shows
//     each process only to those allowed to trace it.
//
// So a server sees its own processes only; when it exits, the kernel kills
// what it left. When Warden dies, the launcher gets SIGKILL, and with it,
// PID 1 of the namespace all servers are in, every one of them.
//
// Where the kernel offers no user namespaces the launcher runs without them,
// as every server's subreaper, and kills each server's session when it exits
// and everything when Warden goes; Landlock then keeps servers from reading
// Warden's files and the credential stores by read rules that go around
// them, and NewLauncher says what that costs.
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
	Name    string // the server's, for its own places
	Command string
	Args    []string
	Env     map[string]string // the server's configured env
	Dir     string            // working directory, which it may write; "" for Warden's, which it may not

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
	state  string   // Warden's state dir, where servers' own places are
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
	l := &Launcher{Mode: mode, self: self, state: stateDir, config: configPath}
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
			return l, errors.New("this kernel offers no Landlock: stdio servers can write all your files, see each other's processes and read their environment; enable the landlock LSM to confine them")
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
	const fix = "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces>0) to confine them"
	if launcher.LandlockABI() < 1 {
		return l, fmt.Errorf("stdio servers run without namespaces (%v) and without Landlock: they can read Warden's state dir, config and your credential stores, and write all your files; "+fix, err)
	}
	return l, fmt.Errorf("stdio servers run without namespaces (%v): Landlock keeps them from writing outside their own places and from reading Warden's files and your credential stores, "+
		"but they cannot list the directories on the way there (your home) nor read what is made there after they start; "+fix, err)
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
	s, err := l.confinement(spec, env)
	if err != nil {
		return nil, err
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

// confinement is how the launcher confines spec: by default the server
// writes only beneath its configured cwd, its own places (see ownPlaces:
// its data, config, cache and temp dir) and /dev, and, in namespaces,
// reads no credential store and nothing of Warden's. Without a configured
// cwd it starts in Warden's, which it may read (npx finds packages
// installed there) but not write: Warden's cwd is often the home.
func (l *Launcher) confinement(spec Spec, env []string) (launcher.Start, error) {
	if l.state == "" {
		return launcher.Start{}, errors.New("no state dir to keep the server's own places in")
	}
	for _, w := range append([]string{spec.Dir}, spec.Write...) {
		if err := l.holdsWarden(w); err != nil {
			return launcher.Start{}, err
		}
	}
	own, err := ownPlaces(l.state, spec.Name)
	if err != nil {
		return launcher.Start{}, err
	}
	env = withOwnPlaces(env, own, spec.Env)
	s := launcher.Start{Argv: append([]string{spec.Command}, spec.Args...), Env: env, Dir: cmp.Or(spec.Dir, l.cwd),
		NoNetwork: spec.NoNetwork, Paths: spec.Paths, BaseRead: []string{"/"}, Own: []string{own},
		Read: spec.Read, Write: spec.Write}
	if spec.Dir != "" {
		s.Own = append(s.Own, spec.Dir)
	}
	if l.Mode == Namespaces {
		s.Hide, s.Expose, s.HideFiles = l.hidden(spec, env, own)
	} else {
		// No mounts without namespaces: Landlock reads only around what
		// would be covered.
		dirs, files := credentialStores([]string{homeDir(), launcher.EnvValue(env, "HOME")}, os.Getenv)
		deny := append(append(dirs, files...), l.hide...)
		if l.config != "" {
			deny = append(deny, filepath.Clean(l.config))
		}
		s.BaseRead = readRoots(withReal(deny))
	}
	return s, nil
}

// hidden picks what to cover from a server, and what to show again under
// a cover: the state dir, showing the server's own places; the config
// file's directory, showing its other entries when the server needs that
// directory (its cwd, HOME, TMPDIR, its sandbox paths, a path its command
// or args name) but never the config, not even one saved later by rename;
// and the credential stores (credentialStores), showing what the config
// names for the server inside them (its cwd, sandbox paths, args).
func (l *Launcher) hidden(spec Spec, env []string, own string) (dirs, expose, files []string) {
	given := append([]string{spec.Dir}, spec.Read...)
	given = append(given, spec.Write...)
	given = append(given, argPaths(spec)...)
	dirs = slices.Clone(l.hide)
	expose = []string{own}
	if cdir, show := l.configDir(spec, env); cdir != "" {
		dirs = append(dirs, cdir)
		expose = append(expose, show...)
	} else if show != nil {
		files = show // the config is at the root: only the file
	}
	cdirs, cfiles := credentialStores([]string{homeDir(), launcher.EnvValue(env, "HOME")}, os.Getenv)
	dirs = append(dirs, existing(cdirs)...)
	files = append(files, existing(cfiles)...)
	for _, g := range given {
		if g != "" && filepath.IsAbs(g) && !l.warden(g) {
			expose = append(expose, filepath.Clean(g))
		}
	}
	// Outermost first: a cover inside another's shown entry goes on top.
	slices.SortFunc(dirs, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(a, "/"), strings.Count(b, "/")), strings.Compare(a, b))
	})
	slices.Sort(expose)
	return slices.Compact(dirs), slices.Compact(expose), files
}

// warden reports whether path is Warden's: its config, or in its state dir.
func (l *Launcher) warden(path string) bool {
	if l.config != "" && filepath.Clean(path) == filepath.Clean(l.config) {
		return true
	}
	return slices.ContainsFunc(l.hide, func(d string) bool { return within(path, d) })
}

// configDir is the config file's directory to cover and what to show in
// it: nothing when the server needs none of it, else its other entries.
// A config at / is covered as a file (show holds it, cdir is "").
func (l *Launcher) configDir(spec Spec, env []string) (cdir string, show []string) {
	if l.config == "" {
		return "", nil
	}
	if _, err := os.Stat(l.config); err != nil {
		return "", nil
	}
	cdir = filepath.Dir(l.config)
	if l.warden(cdir) {
		return "", nil // hidden with the state dir
	}
	if !needsDir(spec, env, cdir) {
		return cdir, nil
	}
	if cdir == "/" {
		return "", []string{l.config}
	}
	entries, _ := os.ReadDir(cdir)
	show = []string{}
	for _, e := range entries {
		if p := filepath.Join(cdir, e.Name()); p != filepath.Clean(l.config) {
			show = append(show, p)
		}
	}
	return cdir, show
}

// needsDir reports whether spec needs what is in dir: its cwd, HOME or
// TMPDIR or its sandbox paths are there, or its command or args name a
// path there ("/d/x", "--data=/d/x", "sh -c '... /d/x'").
func needsDir(spec Spec, env []string, dir string) bool {
	needed := []string{spec.Dir, launcher.EnvValue(env, "HOME"), launcher.EnvValue(env, "TMPDIR"), os.TempDir()}
	needed = append(needed, spec.Read...)
	needed = append(needed, spec.Write...)
	for _, n := range needed {
		if n != "" && within(n, dir) {
			return true
		}
	}
	for _, a := range append([]string{spec.Command}, spec.Args...) {
		if strings.Contains(a, dir+"/") || strings.HasSuffix(a, dir) {
			return true
		}
	}
	return false
}

// argPaths are the absolute paths spec's args name ("/d", "--data=/d").
func argPaths(spec Spec) []string {
	var out []string
	for _, a := range spec.Args {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v
		}
		if strings.HasPrefix(a, "/") {
			out = append(out, a)
		}
	}
	return out
}

// homeDir is Warden's home ("" when unknown).
func homeDir() string {
	h, _ := os.UserHomeDir()
	return h
}

// within reports whether path is dir or below it.
// holdsWarden refuses a directory a server may write (its cwd, a write
// path) that holds Warden's state dir, or holds the config file's
// directory beneath it: the server could move that aside and put its own
// in its place, for the next warden to read. (The config's directory
// itself is covered read-only.)
func (l *Launcher) holdsWarden(dir string) error {
	if dir == "" {
		return nil
	}
	for _, d := range l.hide {
		if within(d, dir) {
			return fmt.Errorf("%s holds Warden's state dir %s: a server that may write there could move it aside and put its own in its place; give it a directory that does not hold it", dir, d)
		}
	}
	if l.config != "" {
		if c := filepath.Dir(l.config); within(c, dir) && filepath.Clean(c) != filepath.Clean(dir) {
			return fmt.Errorf("%s holds the directory of Warden's config %s: a server that may write there could move it aside and put its own in its place; give it a directory that does not hold it", dir, l.config)
		}
	}
	return nil
}

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
