package reaper

import "syscall"

func setPdeathsig(sig syscall.Signal) error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(sig), 0)
	if errno != 0 {
		return errno
	}
	return nil
}
