package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lifelineFD is the launcher's copy of the lifeline's read end (ExtraFiles[0]).
const lifelineFD = 3

// init runs the launcher, when this process was started as one, before the
// packages that import sandbox are initialized: Go initializes a package once
// its imports are, so a launcher pays for the few packages sandbox needs, not
// for the templates, registries and tables of the rest of Warden.
func init() { maybeRun() }

// maybeRun runs the launcher and exits when this process was started as one.
func maybeRun() {
	spec, ok := os.LookupEnv(launchEnv)
	if !ok {
		return
	}
	os.Exit(launch(spec, os.Args[1:]))
}

func launch(spec string, argv []string) int {
	var p plan
	if err := json.Unmarshal([]byte(spec), &p); err != nil {
		return fail("bad plan: %v", err)
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
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(deathSig), 0, 0, 0); err != nil {
		return fail("parent-death signal: %v", err)
	}
	if wardenGone() {
		return 1
	}
	_ = unix.Close(lifelineFD)
	if p.Namespaces {
		if err := confine(p); err != nil {
			return fail("%v", err)
		}
	}
	if p.Paths || (p.NoNetwork && !p.Namespaces) {
		if err := restrict(p); err != nil {
			return fail("landlock: %v", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail("no_new_privs: %v", err)
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

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "warden launcher: "+format+"\n", args...)
	return 126
}

// wardenGone reports whether Warden died before the parent-death signal was
// asked for: then the lifeline's write end is closed.
func wardenGone() bool {
	fds := []unix.PollFd{{Fd: lifelineFD, Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}

// confine hides Warden's files, mounts a /proc of the new PID namespace and
// drops every capability. It runs as root of a new user namespace, so the
// mounts it makes can't be undone by the server, which has no capability
// left in it.
func confine(p plan) error {
	// Read before the new /proc is mounted: its first read of /proc/sys
	// costs more than the rest of the launcher's setup.
	last := lastCap()
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	for _, dir := range p.Hide {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if err := unix.Mount("warden-hidden", dir, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0"); err != nil {
			return fmt.Errorf("hide %s: %w", dir, err)
		}
	}
	for _, file := range p.HideFiles {
		if err := unix.Mount("/dev/null", file, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("hide %s: %w", file, err)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount a private /proc: %w", err)
	}
	if p.Dir != "" {
		// Enter the cwd again through the new mounts.
		if err := os.Chdir(p.Dir); err != nil {
			return err
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	return unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if n, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil {
		return n
	}
	return unix.CAP_LAST_CAP
}

// execServer replaces the launcher with the server, which becomes PID 1 of
// its namespace.
func execServer(argv, env []string) int {
	path, err := lookPath(argv[0], env)
	if err != nil {
		return fail("%v", err)
	}
	err = syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "exec %s: %v\n", argv[0], err)
	return 127
}

// lookPath resolves name on the server's PATH, not Warden's.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range strings.Split(envValue(env, "PATH"), ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

// reap runs the server as a child and stays, without namespaces, to kill
// the server's process group and every orphan it adopted once the server
// exits or Warden dies (a process that left the group with setsid is still
// reparented here, as a subreaper).
func reap(argv, env []string, sigs <-chan os.Signal) int {
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	path, err := lookPath(argv[0], env)
	if err != nil {
		return fail("%v", err)
	}
	child := exec.Command(path, argv[1:]...)
	child.Args[0] = argv[0]
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = env
	if err := child.Start(); err != nil {
		return fail("start %s: %v", argv[0], err)
	}
	done := make(chan int, 1)
	go func() {
		_ = child.Wait()
		done <- child.ProcessState.ExitCode()
	}()
	code := 1
	select {
	case code = <-done:
	case <-sigs:
		// Warden stops the server (or died): the group goes, gently first.
		signal.Ignore(syscall.SIGTERM)
		_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGTERM)
		select {
		case code = <-done:
		case <-time.After(500 * time.Millisecond):
		}
	}
	killOrphans()
	_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL) // the reaper too
	return code
}

// killOrphans kills the processes the reaper adopted as a subreaper (they
// left the process group, so the group kill misses them), until none is left.
func killOrphans() {
	self := os.Getpid()
	for range 50 {
		kids := childrenOf(self)
		if len(kids) == 0 {
			return
		}
		for _, pid := range kids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range kids {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}
}

func withoutLaunchEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, launchEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}
