package launcher

import (
	"bytes"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// reap runs the server as a child and stays, without namespaces, to kill
// the server's process group and every orphan it adopted once the server
// exits or Warden dies (a process that left the group with setsid is still
// reparented here, as a subreaper).
func reap(argv, env []string, sigs <-chan os.Signal) int {
	_ = prctl(prSetChildSubreaper, 1)
	path, err := LookPath(argv[0], env)
	if err != nil {
		return fail(err.Error())
	}
	// os.StartProcess, not os/exec: see the package's doc.
	child, err := os.StartProcess(path, argv, &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		return fail("start " + argv[0] + ": " + err.Error())
	}
	done := make(chan int, 1)
	go func() {
		st, err := child.Wait()
		if err != nil {
			done <- -1
			return
		}
		done <- st.ExitCode()
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

// Parents maps every process's PID to its parent's.
func Parents() map[int]int {
	out := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) > 1 {
			if pp, err := strconv.Atoi(string(f[1])); err == nil {
				out[pid] = pp
			}
		}
	}
	return out
}

// childrenOf lists pid's direct children.
func childrenOf(pid int) []int {
	var out []int
	for p, pp := range Parents() {
		if pp == pid {
			out = append(out, p)
		}
	}
	return out
}
