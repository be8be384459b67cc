package launcher

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// systemRead are the directories a server with "paths" may still read and
// execute from: programs, libraries, settings, and the kernel's views.
var systemRead = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/run", "/proc", "/sys"}

// systemWrite: device files such as /dev/null and /dev/tty are written too.
var systemWrite = []string{"/dev"}

// Landlock's ABI (linux/landlock.h; see sys.go for why not from x/sys/unix).
const (
	llExecute    = 0x1
	llWriteFile  = 0x2
	llReadFile   = 0x4
	llReadDir    = 0x8
	llMakeBlock  = 0x800
	llRefer      = 0x2000
	llTruncate   = 0x4000
	llIoctlDev   = 0x8000
	llBindTCP    = 0x1
	llConnectTCP = 0x2

	llScopeAbstractUnix = 0x1
	llScopeSignal       = 0x2

	llCreateRulesetVersion = 0x1
	llRulePathBeneath      = 0x1

	llRead     = llExecute | llReadFile | llReadDir
	llFileOnly = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev
)

// rulesetAttr is struct landlock_ruleset_attr.
type rulesetAttr struct {
	accessFS, accessNet, scoped uint64
}

// pathBeneathAttr is struct landlock_path_beneath_attr (packed: the kernel
// reads its first 12 bytes).
type pathBeneathAttr struct {
	allowedAccess uint64
	parentFd      int32
}

// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func LandlockABI() int {
	v, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, llCreateRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// fsRights are the file-system rights Landlock knows at ABI abi.
func fsRights(abi int) uint64 {
	r := uint64(1<<13 - 1) // ABI 1: execute ... make_sym
	if abi >= 2 {
		r |= llRefer
	}
	if abi >= 3 {
		r |= llTruncate
	}
	if abi >= 5 {
		r |= llIoctlDev
	}
	return r
}

// restrict puts this thread (and what it starts) in a Landlock domain of
// its own: a server can then neither trace nor see in /proc (hidepid) a
// process outside it, the launcher's or another server's, and from ABI 6
// not signal one either. Its files: it reads beneath BaseRead (or, with
// s.Paths, only the system directories, Read, Write and Own) and writes
// only beneath /dev, Own and Write. With s.NoNetwork, no TCP bind or
// connect. Without Landlock only a server that needs it is refused
// (Warden warns at start).
func restrict(s Start, abi int, namespaces bool) error {
	if abi < 1 {
		if s.Paths || (s.NoNetwork && !namespaces) {
			return errors.New("the kernel offers no Landlock")
		}
		return nil
	}
	all := fsRights(abi)
	attr := rulesetAttr{accessFS: all}
	if s.NoNetwork && abi >= 4 {
		attr.accessNet = llBindTCP | llConnectTCP
	}
	if abi >= 6 {
		// Nor connect to an abstract unix socket outside its domain (the
		// user's X server, a session bus): programs that would act for it.
		attr.scoped = llScopeSignal | llScopeAbstractUnix
	}
	fd, _, errno := syscall.Syscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return errors.New("create ruleset: " + errno.Error())
	}
	defer syscall.Close(int(fd))
	read := s.BaseRead
	if s.Paths {
		read = systemRead
	}
	// Warden's choices follow links (/lib is one on most systems) and may
	// be missing; the config's are checked link by link and must exist.
	for _, r := range []struct {
		paths  []string
		access uint64
		strict bool
	}{
		{read, llRead, false}, {systemWrite, all, false}, {s.Own, all, false},
		{s.Read, llRead, true}, {s.Write, all, true},
	} {
		for _, path := range r.paths {
			f, err := openRule(path, r.strict)
			if err != nil {
				if r.strict || !os.IsNotExist(err) {
					return err
				}
				continue
			}
			err = allow(int(fd), f, r.access&all)
			f.Close()
			if err != nil {
				return err
			}
		}
	}
	_, _, errno = syscall.Syscall(sysLandlockRestrictSelf, fd, 0, 0)
	if errno != 0 {
		return errors.New("restrict: " + errno.Error())
	}
	return nil
}

// openRule opens path for a rule (O_PATH). A strict path is resolved
// without following any link, in any of its components: a server that
// may write a configured directory could otherwise replace a directory
// below it by a link, and gain rights wherever the link points once
// Landlock followed it at its next start.
func openRule(path string, strict bool) (*os.File, error) {
	if !strict {
		return os.OpenFile(path, oPath|syscall.O_CLOEXEC, 0)
	}
	name, err := syscall.BytePtrFromString(path)
	if err != nil {
		return nil, errors.New("sandbox path " + path + ": " + err.Error())
	}
	how := openHow{flags: oPath | syscall.O_CLOEXEC, resolve: resolveNoSymlinks}
	for {
		fd, _, errno := syscall.Syscall6(sysOpenat2, atFdcwd, uintptr(unsafe.Pointer(name)),
			uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
		switch errno {
		case 0:
			return os.NewFile(fd, path), nil
		case syscall.EINTR, syscall.EAGAIN:
			continue
		case syscall.ELOOP:
			return nil, errors.New("sandbox path " + path + " is a symbolic link or lies under one, and rights are never granted through a link: " +
				"put the real directory in \"sandbox\": {\"paths\": ...}, or remove the link if the server made it")
		case syscall.ENOENT:
			return nil, errors.New("sandbox path " + path + " does not exist: create it or remove it from \"sandbox\": {\"paths\": ...}")
		}
		return nil, errors.New("sandbox path " + path + ": " + errno.Error())
	}
}

// allow adds a rule granting access beneath f.
func allow(ruleset int, f *os.File, access uint64) error {
	if fi, err := f.Stat(); err == nil && !fi.IsDir() {
		access &= llFileOnly
	}
	rule := pathBeneathAttr{allowedAccess: access, parentFd: int32(f.Fd())}
	_, _, errno := syscall.Syscall6(sysLandlockAddRule, uintptr(ruleset), llRulePathBeneath,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return errors.New("allow " + f.Name() + ": " + errno.Error())
	}
	return nil
}
