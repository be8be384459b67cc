package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFile is the file in the state dir whose lock a running daemon holds.
const LockFile = "warden.lock"

// Lock takes the state dir for this process: one daemon per state dir,
// whatever its store (the embedded store's file lock holds the dir only
// when the store is the embedded one), so that the dir's socket, server
// logs and upstream sessions are one daemon's. The lock goes with the
// process; release lets it go before.
func Lock(dir string) (release func(), err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("the state dir %s is in use: another warden is running with this state dir; stop it or use --state-dir", dir)
		}
		return nil, fmt.Errorf("state dir %s: lock %s: %w", dir, LockFile, err)
	}
	return func() { f.Close() }, nil
}
