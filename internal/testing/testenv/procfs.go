package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Proc is a process seen in /proc, told apart from a later one with the
// same pid by its start time; What is its command line, spaces for NULs.
type Proc struct {
	PID   int
	Start string
	What  string
}

// procStat reads a process's parent and start time from /proc/PID/stat;
// false when it is gone or a zombie (dead for a test's purposes).
func procStat(pid int) (ppid int, start string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, "", false
	}
	// The command name (field 2) may hold spaces; fields after it are plain.
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	f := strings.Fields(rest) // f[0] is field 3 (state)
	if len(f) < 20 || f[0] == "Z" {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[19], true // field 22: start time
}

// Alive says whether pid is a live process (not a zombie).
func Alive(pid int) bool {
	_, _, ok := procStat(pid)
	return ok
}

// Alive says whether this very process still runs (its pid not reused).
func (p Proc) Alive() bool {
	_, start, ok := procStat(p.PID)
	return ok && start == p.Start
}

// pids lists the numeric entries of /proc.
func pids() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// cmdline is a process's command line, arguments separated by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '}))
}

// Descendants are the live processes below root, nearest first.
func Descendants(root int) []Proc {
	children := map[int][]int{}
	for _, pid := range pids() {
		if ppid, _, ok := procStat(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []Proc
	for queue := children[root]; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		if _, start, ok := procStat(pid); ok {
			out = append(out, Proc{PID: pid, Start: start, What: cmdline(pid)})
		}
		queue = append(queue, children[pid]...)
	}
	return out
}

// ProcessesMentioning lists the live pids whose command line contains s,
// for processes a test did not start itself (a server's children).
func ProcessesMentioning(s string) []int {
	var out []int
	for _, pid := range pids() {
		if strings.Contains(cmdline(pid), s) && Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}
