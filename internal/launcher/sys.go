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
	prCapbsetDrop        = 24 // PR_CAPBSET_DROP
	prSetChildSubreaper  = 36 // PR_SET_CHILD_SUBREAPER
	prSetNoNewPrivs      = 38 // PR_SET_NO_NEW_PRIVS
	prCapAmbient         = 47 // PR_CAP_AMBIENT
	prCapAmbientClearAll = 4  // PR_CAP_AMBIENT_CLEAR_ALL
	capLastCap           = 40 // CAP_LAST_CAP, when /proc does not say

	pollIn   = 0x1
	pollErr  = 0x8
	pollHup  = 0x10
	pollNval = 0x20

	oPath = 0x200000 // O_PATH

	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446
)

// prctl is prctl(2) with one argument.
func prctl(option, arg uintptr) error {
	_, _, errno := syscall.Syscall6(syscall.SYS_PRCTL, option, arg, 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// pollFd is struct pollfd.
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// poll is poll(2) with a zero timeout, as ppoll(2) (which every
// architecture has).
func poll(fds []pollFd) (int, error) {
	var ts syscall.Timespec
	n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), uintptr(len(fds)),
		uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
