package launcher

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// killSession sends sig to every process of session sid (a server and
// whatever it started that did not leave its session).
func killSession(sid int, sig syscall.Signal) {
	_ = syscall.Kill(-sid, sig)
	for pid, st := range processes() {
		if st.session == sid {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// killOrphans kills the processes the launcher adopted as a subreaper
// (they left their server's session), until none is left.
func killOrphans() {
	self := os.Getpid()
	for range 50 {
		var kids []int
		for pid, st := range processes() {
			if st.parent == self {
				kids = append(kids, pid)
			}
		}
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
	for pid, st := range processes() {
		out[pid] = st.parent
	}
	return out
}

type procStat struct{ parent, session int }

// processes reads every visible process's parent and session.
func processes() map[int]procStat {
	out := map[int]procStat{}
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
		// pid (comm) state ppid pgrp session ...; comm may hold spaces
		// and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) > 3 {
			pp, err1 := strconv.Atoi(string(f[1]))
			sid, err2 := strconv.Atoi(string(f[3]))
			if err1 == nil && err2 == nil {
				out[pid] = procStat{parent: pp, session: sid}
			}
		}
	}
	return out
}
