package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/wardenmcp/warden/internal/launcher"
	"github.com/wardenmcp/warden/internal/state"
	"golang.org/x/sys/unix"
)

// The operator API admits a caller only when it can name the process that
// holds the caller's end of the connection and that process is one Warden
// did not start: not a descendant of Warden (a server, or anything a server
// started), and in Warden's own user and PID namespaces (not a server of
// this or another Warden, which run in namespaces of their own). A process
// cannot shed its ancestry or its namespaces; it can shed a file
// descriptor (pass it away, or close it with the request sent), so every
// caller that cannot be found is refused, never admitted.

// ErrPeerUnknown is returned when no process can be found holding the
// caller's end: it was closed, passed to another process (in flight), or
// is held by a process whose open files Warden may not read.
var ErrPeerUnknown = errors.New("the calling process could not be identified (no process Warden may inspect holds its end of the connection); run the warden CLI from your own shell")

// ErrSpawned is returned for a caller that is a process Warden started,
// or any server's process.
var ErrSpawned = errors.New("the operator API refuses processes Warden started (MCP servers and their children) and processes of any Warden's servers; run the warden CLI from your own shell")

// TCPCaller checks the loopback TCP connection from remote to local (this
// process's end). A connection from another host (an address that is not
// this machine's) is not a local process: the token alone decides. A
// connection made by a process of another user is admitted too: no server
// Warden starts runs as anyone but Warden's own user.
func TCPCaller(local, remote *net.TCPAddr) error {
	sock, found, err := peerSocket(local, remote)
	switch {
	case err != nil:
		return err
	case !found && localAddress(remote.IP):
		return ErrPeerUnknown
	case !found:
		return nil
	case sock.inode == 0:
		return ErrPeerUnknown
	case sock.uid != uint32(os.Geteuid()):
		return nil
	}
	link := sock.link()
	holders, _ := socketHolders(link, sock.uid)
	return holdersAdmitted(holders, link)
}

// ErrServerClient is returned for an MCP client that is a process Warden
// started.
var ErrServerClient = errors.New("Warden's MCP endpoints refuse processes Warden started (MCP servers and their children): a server may not call other servers' tools through Warden; connect MCP clients from your own programs")

// ClientCaller checks the loopback TCP connection from remote to local of
// an MCP client: refused when a process this Warden started (a server, or
// anything a server started) holds its other end, since through Warden a
// server, quarantined or not, would act with every other server's tools.
// Every other process is admitted, one in sandboxes of its own (a
// flatpak'd editor) too. When no process Warden may inspect holds it, it
// is refused if one Warden started hides its open files (non-dumpable,
// under a Warden that is not root): that one may hold it.
func ClientCaller(local, remote *net.TCPAddr) error {
	sock, found, err := peerSocket(local, remote)
	if err != nil || !found || sock.inode == 0 || sock.uid != uint32(os.Geteuid()) {
		return err
	}
	holders, hidden := socketHolders(sock.link(), sock.uid)
	if len(holders) == 0 {
		holders = hidden
	}
	for _, pid := range holders {
		if spawned, err := descends(pid, os.Getpid()); err == nil && spawned {
			return ErrServerClient
		}
	}
	return nil
}

// holdersAdmitted admits the processes found holding link when each that
// still holds it is an operator's and at least one is. One that let go of
// it since it was found is passed over: a child the caller forked, between
// its fork and its exec, holds every file of its parent for a moment, and
// is not the caller. Passing over one that let go admits nothing by
// itself: each process admitted holds link when it is checked.
func holdersAdmitted(holders []int, link string) error {
	admitted := 0
	for _, pid := range holders {
		switch err := operatorProcess(pid, link); {
		case errors.Is(err, errLetGo):
		case err != nil:
			return err
		default:
			admitted++
		}
	}
	if admitted == 0 {
		return ErrPeerUnknown
	}
	return nil
}

// errLetGo: the process no longer holds the file (or has exited).
var errLetGo = errors.New("it no longer holds the connection")

// UnixCaller checks a connection on a unix socket by the process the
// kernel recorded when it connected (SO_PEERPIDFD: that process, not a
// number another could take over).
func UnixCaller(c *net.UnixConn) error {
	peer, err := state.PeerOf(c, true)
	if err != nil {
		return err
	}
	if peer.PIDFD >= 0 {
		defer unix.Close(peer.PIDFD)
	}
	switch {
	case peer.UID == 0 && os.Geteuid() != 0:
		return nil // root, which no server of this Warden runs as
	case peer.UID != uint32(os.Geteuid()):
		return fmt.Errorf("the socket belongs to uid %d; uid %d may not use it", os.Geteuid(), peer.UID)
	}
	pid := peer.PID
	if peer.PIDFD >= 0 {
		if pid = pidfdPID(peer.PIDFD); pid <= 0 {
			return ErrPeerUnknown // it exited
		}
	}
	return operatorProcess(pid, "")
}

// operatorProcess refuses pid unless it is outside Warden's descendants
// and shares Warden's user and PID namespaces. With holds set, pid must
// still hold that file once pinned (else errLetGo), so that a process that
// exited meanwhile is not confused with a new one given its number.
func operatorProcess(pid int, holds string) error {
	pidfd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH) && holds != "":
		return errLetGo
	case err != nil:
		return ErrPeerUnknown
	}
	defer unix.Close(pidfd)
	if holds != "" && !holdsFile(pid, holds) {
		return errLetGo
	}
	for _, ns := range []string{"user", "pid"} {
		mine, err1 := os.Readlink("/proc/self/ns/" + ns)
		theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/" + ns)
		if err1 != nil || err2 != nil {
			return ErrPeerUnknown
		}
		if mine != theirs {
			return ErrSpawned
		}
	}
	spawned, err := descends(pid, os.Getpid())
	if err != nil {
		return ErrPeerUnknown
	}
	if spawned {
		return ErrSpawned
	}
	if unix.PidfdSendSignal(pidfd, 0, nil, 0) != nil {
		return ErrPeerUnknown // gone while it was looked at
	}
	return nil
}

// descends reports whether pid has ancestor among its parents.
func descends(pid, ancestor int) (bool, error) {
	for seen := 0; pid > 1; seen++ {
		if seen == 4096 {
			return false, errors.New("no end to its parents") // unknown: refused
		}
		parent, _, err := launcher.Stat(pid)
		if err != nil {
			return false, err
		}
		if parent == ancestor {
			return true, nil
		}
		pid = parent
	}
	return false, nil
}

// pidfdPID is the process a pidfd refers to, as this process's PID
// namespace numbers it; 0 or less when it has exited.
func pidfdPID(pidfd int) int {
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(pidfd))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0
			}
			return n
		}
	}
	return 0
}

// socketHolders lists the processes of user uid whose open files include
// link (the socket's "socket:[inode]"). A process whose files Warden may
// not read (another user's, or one that made itself non-dumpable) is not
// among them; those of uid are in hidden.
func socketHolders(link string, uid uint32) (holders, hidden []int) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if fi, err := os.Stat("/proc/" + e.Name()); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uid {
			continue
		}
		switch holds, err := holdsFileErr(pid, link); {
		case holds:
			holders = append(holders, pid)
		case errors.Is(err, fs.ErrPermission):
			hidden = append(hidden, pid)
		}
	}
	return holders, hidden
}

// holdsFile reports whether pid has link (such as "socket:[123]") open.
func holdsFile(pid int, link string) bool {
	holds, _ := holdsFileErr(pid, link)
	return holds
}

// holdsFileErr is holdsFile, with why pid's open files could not be read.
func holdsFileErr(pid int, link string) (bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if l, err := os.Readlink(dir + e.Name()); err == nil && l == link {
			return true, nil
		}
	}
	return false, nil
}

// localAddress reports whether ip is one of this machine's.
func localAddress(ip net.IP) bool {
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// diagSocket is what the kernel's socket diagnostics say of a socket.
type diagSocket struct {
	inode uint32 // 0 when no process holds it any more
	uid   uint32 // the user whose process made it
}

// link is how a process's open files name the socket ("socket:[inode]").
func (s diagSocket) link() string { return "socket:[" + strconv.FormatUint(uint64(s.inode), 10) + "]" }

// peerSocket finds the socket whose local address is remote and whose peer
// is local, by asking the kernel's socket diagnostics (NETLINK_SOCK_DIAG)
// for exactly that socket: reading /proc/net/tcp costs milliseconds on a
// machine with thousands of sockets. found is false when this network
// namespace holds no such socket.
func peerSocket(local, remote *net.TCPAddr) (s diagSocket, found bool, err error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return s, false, fmt.Errorf("socket diagnostics: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 2}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	// An IPv4 client's socket, or a dual-stack one holding an IPv4-mapped
	// address.
	for _, family := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if s, found, err = diagQuery(fd, family, remote, local); err != nil || found {
			return s, found, err
		}
	}
	return s, false, nil
}

// diagQuery asks for the TCP socket src→dst of family; found is false when
// the kernel knows none.
func diagQuery(fd int, family uint8, src, dst *net.TCPAddr) (s diagSocket, found bool, err error) {
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
		return s, false, nil
	}
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff) // no cookie
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return s, false, fmt.Errorf("socket diagnostics: %w", err)
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return s, false, fmt.Errorf("socket diagnostics: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil || len(msgs) == 0 {
		return s, false, fmt.Errorf("socket diagnostics: bad answer: %v", err)
	}
	m := msgs[0]
	switch {
	case m.Header.Type == unix.NLMSG_ERROR:
		if len(m.Data) >= 4 {
			if errno := -int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 && syscall.Errno(errno) != syscall.ENOENT {
				return s, false, fmt.Errorf("socket diagnostics: %w", syscall.Errno(errno))
			}
		}
		return s, false, nil
	case len(m.Data) < 72: // sizeof(struct inet_diag_msg)
		return s, false, errors.New("socket diagnostics: short answer")
	}
	return diagSocket{uid: binary.NativeEndian.Uint32(m.Data[64:]), inode: binary.NativeEndian.Uint32(m.Data[68:])}, true, nil
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
