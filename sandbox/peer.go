package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/wardenmcp/warden/internal/launcher"
	"golang.org/x/sys/unix"
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
// It asks the kernel for the connection's socket inode, then reads the open
// files of this process's descendants in /proc.
func FromDescendant(local, remote *net.TCPAddr) (bool, error) {
	inode, err := socketInode(local, remote)
	if err != nil {
		return false, err
	}
	if inode == "0" {
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
// and whose peer is local, by asking the kernel's socket diagnostics
// (NETLINK_SOCK_DIAG) for exactly that socket: reading /proc/net/tcp costs
// milliseconds on a machine with thousands of sockets. "0" when the socket
// is no longer held by any process.
func socketInode(local, remote *net.TCPAddr) (string, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return "", fmt.Errorf("socket diagnostics: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 2}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	// An IPv4 client's socket, or a dual-stack one holding an IPv4-mapped
	// address.
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		inode, found, err := diagQuery(fd, family, remote, local)
		if err != nil {
			return "", err
		}
		if found {
			return strconv.FormatUint(uint64(inode), 10), nil
		}
	}
	return "", fmt.Errorf("no socket from %s to %s", remote, local)
}

// diagQuery asks for the TCP socket src→dst of family; found is false when
// the kernel knows none.
func diagQuery(fd int, family uint8, src, dst *net.TCPAddr) (inode uint32, found bool, err error) {
	const hdr, req = 16, 56 // sizeof(struct nlmsghdr), sizeof(struct inet_diag_req_v2)
	b := make([]byte, hdr+req)
	binary.NativeEndian.PutUint32(b[0:], hdr+req)
	binary.NativeEndian.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(b[6:], unix.NLM_F_REQUEST)
	r := b[hdr:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(r[4:], 0xffffffff) // any state
	id := r[8:]                                      // struct inet_diag_sockid
	binary.BigEndian.PutUint16(id[0:], uint16(src.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(dst.Port))
	if !diagAddr(id[4:20], src.IP, family) || !diagAddr(id[20:36], dst.IP, family) {
		return 0, false, nil
	}
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // no cookie
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false, fmt.Errorf("socket diagnostics: %w", err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, false, fmt.Errorf("socket diagnostics: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		return 0, false, fmt.Errorf("socket diagnostics: bad answer: %v", err)
	}
	m := msgs[0]
	switch {
	case m.Header.Type == unix.NLMSG_ERROR:
		if len(m.Data) >= 4 {
			if errno := -int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 && syscall.Errno(errno) != syscall.ENOENT {
				return 0, false, fmt.Errorf("socket diagnostics: %w", syscall.Errno(errno))
			}
		}
		return 0, false, nil
	case len(m.Data) < 72: // sizeof(struct inet_diag_msg)
		return 0, false, errors.New("socket diagnostics: short answer")
	}
	return binary.NativeEndian.Uint32(m.Data[68:]), true, nil
}

// diagAddr writes ip into a sockid's 16-byte address as family has it.
func diagAddr(into []byte, ip net.IP, family uint8) bool {
	if family == unix.AF_INET {
		v4 := ip.To4()
		copy(into, v4)
		return v4 != nil
	}
	copy(into, ip.To16())
	return true
}

// descendants lists the processes below root, children first.
func descendants(root int) []int {
	kids := map[int][]int{}
	for pid, pp := range launcher.Parents() {
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
