package sandbox

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// systemRead are the directories a server with "paths" may still read and
// execute from: programs, libraries, settings, and the kernel's views.
var systemRead = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/run", "/proc", "/sys"}

// systemWrite: device files such as /dev/null and /dev/tty are written too.
var systemWrite = []string{"/dev"}

const (
	llRead     = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	llFileOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// fsRights are the file-system rights Landlock knows at ABI abi.
func fsRights(abi int) uint64 {
	r := uint64(1<<13 - 1) // ABI 1: execute ... make_sym
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// restrict applies p's Landlock ruleset to this thread (and what it execs):
// with Paths, files only under Read (read, execute), Write (everything) and
// the system directories; with NoNetwork, no TCP bind or connect.
func restrict(p plan) error {
	abi := landlockABI()
	if abi < 1 {
		return fmt.Errorf("the kernel offers no Landlock")
	}
	var attr unix.LandlockRulesetAttr
	all := fsRights(abi)
	if p.Paths {
		attr.Access_fs = all
	}
	if p.NoNetwork && abi >= 4 {
		attr.Access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	if p.Paths {
		rules := []struct {
			paths  []string
			access uint64
			must   bool // a configured path that is missing is an error
		}{
			{systemRead, llRead, false}, {systemWrite, all, false},
			{p.Read, llRead, true}, {p.Write, all, true},
		}
		for _, r := range rules {
			for _, path := range r.paths {
				if err := allow(int(fd), path, r.access&all); err != nil && (r.must || !os.IsNotExist(err)) {
					return err
				}
			}
		}
	}
	_, _, errno = unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0)
	if errno != 0 {
		return fmt.Errorf("restrict: %w", errno)
	}
	return nil
}

// allow adds a rule granting access beneath path.
func allow(ruleset int, path string, access uint64) error {
	f, err := os.OpenFile(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.IsDir() {
		access &= llFileOnly
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(f.Fd())}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("allow %s: %w", path, errno)
	}
	return nil
}
