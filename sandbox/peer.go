package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// ErrPeerUnknown is returned when no process holds the caller's end of a
// connection any more (it sent a request and closed): the caller can't be
// told apart from a server Warden spawned.
var ErrPeerUnknown = errors.New("the calling process could not be identified (its end of the connection is closed)")

// FromDescendant reports whether the loopback TCP connection from remote to
// local (this process's end) is held by a process descending from this one,
// such as a stdio server Warden started or anything that server started. A
// server's descendants stay descendants: in namespaces, orphans are adopted
// by the server itself; under a reaper, by the reaper.
//
// It reads /proc: the connection's socket inode from /proc/net/tcp{,6},
// then the open files of this process's descendants.
func FromDescendant(local, remote *net.TCPAddr) (bool, error) {
	inode, err := socketInode(local, remote)
	if err != nil {
		return false, err
	}
	if inode == "" || inode == "0" {
		return false, ErrPeerUnknown
	}
	link := "socket:[" + inode + "]"
	for _, pid := range descendants(os.Getpid()) {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // exited meanwhile
		}
		for _, e := range entries {
			if l, err := os.Readlink(dir + e.Name()); err == nil && l == link {
				return true, nil
			}
		}
	}
	return false, nil
}

// socketInode finds the inode of the socket whose local address is remote
// and whose peer is local, as the kernel lists TCP sockets.
func socketInode(local, remote *net.TCPAddr) (string, error) {
	for _, f := range []struct {
		file string
		v6   bool
	}{{"/proc/net/tcp", false}, {"/proc/net/tcp6", true}} {
		want, peer := procAddr(remote, f.v6), procAddr(local, f.v6)
		if want == "" || peer == "" {
			continue
		}
		b, err := os.ReadFile(f.file)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return "", err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[1] == want && fields[2] == peer {
				return fields[9], nil
			}
		}
	}
	return "", fmt.Errorf("no socket from %s to %s in /proc/net/tcp", remote, local)
}

// procAddr writes a as /proc/net/tcp{,6} do: the address's 32-bit words in
// host (little-endian) order, then the port, in hex; IPv4 addresses in tcp6
// as IPv4-mapped. "" when a can't appear in that file.
func procAddr(a *net.TCPAddr, v6 bool) string {
	ip := a.IP.To4()
	if v6 {
		ip = a.IP.To16()
	} else if ip == nil {
		return ""
	}
	var sb strings.Builder
	for i := 0; i < len(ip); i += 4 {
		fmt.Fprintf(&sb, "%08X", binary.LittleEndian.Uint32(ip[i:i+4]))
	}
	fmt.Fprintf(&sb, ":%04X", a.Port)
	return sb.String()
}

// parents maps every process's PID to its parent's.
func parents() map[int]int {
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
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				out[pid] = pp
			}
		}
	}
	return out
}

// descendants lists the processes below root, children first.
func descendants(root int) []int {
	kids := map[int][]int{}
	for pid, pp := range parents() {
		kids[pp] = append(kids[pp], pid)
	}
	var out []int
	queue := kids[root]
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		out = append(out, pid)
		queue = append(queue, kids[pid]...)
	}
	return out
}

// childrenOf lists pid's direct children.
func childrenOf(pid int) []int {
	var out []int
	for p, pp := range parents() {
		if pp == pid {
			out = append(out, p)
		}
	}
	return out
}
