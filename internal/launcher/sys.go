package launcher

import (
	"syscall"
	"unsafe"
)

// Linux ABI numbers the syscall package lacks, as golang.org/x/sys/unix has
// them (not imported: see the package's doc). They are the same on every
// Linux architecture.
const (
	prSetPdeathsig       = 1  // PR_SET_PDEATHSIG
	prSetDumpable        = 4  // PR_SET_DUMPABLE
	prCapbsetDrop        = 24 // PR_CAPBSET_DROP
	prSetChildSubreaper  = 36 // PR_SET_CHILD_SUBREAPER
	prSetNoNewPrivs      = 38 // PR_SET_NO_NEW_PRIVS
	prCapAmbient         = 47 // PR_CAP_AMBIENT
	prCapAmbientClearAll = 4  // PR_CAP_AMBIENT_CLEAR_ALL
	capLastCap           = 40 // CAP_LAST_CAP, when /proc does not say

	oPath             = 0x200000     // O_PATH
	atFdcwd           = ^uintptr(99) // AT_FDCWD (-100)
	sysOpenat2        = 437          // openat2(2)
	resolveNoSymlinks = 0x04         // RESOLVE_NO_SYMLINKS

	sysCloseRange     = 436 // close_range(2)
	closeRangeCloexec = 0x4 // CLOSE_RANGE_CLOEXEC

	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446
)

// openHow is struct open_how, openat2(2)'s.
type openHow struct{ flags, mode, resolve uint64 }

// prctl is prctl(2) with one argument.
func prctl(option, arg uintptr) error {
	_, _, errno := syscall.Syscall6(syscall.SYS_PRCTL, option, arg, 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// capHeader and capData are the capget(2) and capset(2) structures, version 3.
type capHeader struct {
	version uint32
	pid     int32
}

type capData struct{ effective, permitted, inheritable uint32 }

// clearInheritable empties this thread's inheritable capabilities (Warden
// gave the launcher two, to keep them as ambient ones across its exec): a
// server running as root of the namespace would get them back at its exec.
func clearInheritable() error {
	hdr := capHeader{version: 0x20080522}
	var data [2]capData
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return errno
	}
	data[0].inheritable, data[1].inheritable = 0, 0
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return errno
	}
	return nil
}
