package launcher

import (
	"bytes"
	"errors"
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
		if pp, sid, err := Stat(pid); err == nil {
			out[pid] = procStat{parent: pp, session: sid}
		}
	}
	return out
}

// Stat reads pid's parent and session from /proc/PID/stat.
func Stat(pid int) (parent, session int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// pid (comm) state ppid pgrp session ...; comm may hold spaces and
	// parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("bad /proc/PID/stat")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) <= 3 {
		return 0, 0, errors.New("bad /proc/PID/stat")
	}
	if parent, err = strconv.Atoi(string(f[1])); err == nil {
		session, err = strconv.Atoi(string(f[3]))
	}
	return parent, session, err
}
