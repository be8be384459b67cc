package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// SocketFile is the daemon's unix socket in the state dir: the operator's
// way in. The CLI finds it from the state dir alone, never from a file
// another process could have written, and the state dir is out of every
// server's sight, so a process that reaches it is the operator's.
const SocketFile = "warden.sock"

// Listen listens on the state dir's socket, replacing one a daemon that
// died left behind. The caller must hold the state dir (Lock), so that it
// replaces no running daemon's socket.
func Listen(dir string) (net.Listener, error) {
	d, _, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	path := viaFD(d, SocketFile)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: %w", filepath.Join(dir, SocketFile), err)
	}
	ln, err := net.Listen("unix", path)
	if err == nil {
		err = os.Chmod(path, 0o600) // the dir (0700) already keeps others out
	}
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", filepath.Join(dir, SocketFile), err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // its name through /proc/self/fd is not one to unlink
	return ln, nil
}

// ErrNoDaemon means no daemon listens on the state dir's socket.
var ErrNoDaemon = errors.New("no warden is running with this state dir")

// Dial connects to the daemon of the state dir. It checks first that the
// dir is this user's and no one else may write to it, and then that the
// process answering runs as this user (or root): only then is it the
// daemon that owns the state dir.
func Dial(ctx context.Context, dir string) (net.Conn, error) {
	d, owner, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "unix", viaFD(d, SocketFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (no one listens on %s): %w", ErrNoDaemon, filepath.Join(dir, SocketFile), err)
		}
		return nil, fmt.Errorf("socket %s: %w", filepath.Join(dir, SocketFile), err)
	}
	if err := checkPeer(c.(*net.UnixConn), owner); err != nil {
		c.Close()
		return nil, fmt.Errorf("socket %s: %w", filepath.Join(dir, SocketFile), err)
	}
	return c, nil
}

// openDir opens the state dir for Listen and Dial, refusing one that is
// not this user's (unless this is root) or that others may write to (where
// another user could have put a socket of their own); owner is its user.
func openDir(dir string) (d *os.File, owner int, err error) {
	d, err = os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, fmt.Errorf("%w (the state dir %s does not exist)", ErrNoDaemon, dir)
		}
		return nil, 0, fmt.Errorf("state dir: %w", err)
	}
	fi, err := d.Stat()
	if err != nil {
		d.Close()
		return nil, 0, err
	}
	owner = int(fi.Sys().(*syscall.Stat_t).Uid)
	switch {
	case owner != os.Geteuid() && os.Geteuid() != 0:
		err = fmt.Errorf("the state dir %s belongs to uid %d, not to you (uid %d): run warden as its owner", dir, owner, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		err = fmt.Errorf("the state dir %s may be written by others (mode %v): chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	if err != nil {
		d.Close()
		return nil, 0, err
	}
	return d, owner, nil
}

// viaFD names file in the open dir d through /proc/self/fd: no link or
// rename between the check and the use, and no limit of a socket path's
// 108 bytes however deep the state dir is.
func viaFD(d *os.File, file string) string {
	return "/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + file
}

// checkPeer wants the process at the other end to run as the state dir's
// owner (or root).
func checkPeer(c *net.UnixConn, owner int) error {
	p, err := PeerOf(c, false)
	if err != nil {
		return err
	}
	if int(p.UID) != owner && p.UID != 0 {
		return fmt.Errorf("the process listening runs as uid %d, not as the state dir's owner (uid %d): it is not that state dir's warden", p.UID, owner)
	}
	return nil
}

// Peer is the process at the other end of a unix socket, as the kernel
// recorded it when the connection was made.
type Peer struct {
	UID   uint32
	PID   int // as this process's PID namespace numbers it
	PIDFD int // with withPIDFD, from Linux 6.5: that process itself (the caller closes it); else -1
}

// PeerOf reads c's peer credentials (SO_PEERCRED and, with withPIDFD,
// SO_PEERPIDFD).
func PeerOf(c *net.UnixConn, withPIDFD bool) (Peer, error) {
	p := Peer{PIDFD: -1}
	raw, err := c.SyscallConn()
	if err != nil {
		return p, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		if cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); cerr == nil && withPIDFD {
			if v, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
				p.PIDFD = v
			}
		}
	}); err != nil {
		return p, err
	}
	if cerr != nil {
		return p, fmt.Errorf("peer credentials: %w", cerr)
	}
	p.UID, p.PID = cred.Uid, int(cred.Pid)
	return p, nil
}
