package state

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// Record is what a running daemon writes down so that the CLI finds it
// from the config file alone: where it listens (which `serve --listen` may
// have changed) and the state dir holding its token (which `serve
// --state-dir` or $WARDEN_STATE_DIR may have changed). It holds no secret.
type Record struct {
	PID      int    `json:"pid"`
	Listen   string `json:"listen"`
	StateDir string `json:"stateDir"`
}

// recordPath is the record of the daemon reading configPath: a hidden file
// beside the config, so that each config file has its own and a daemon
// started on a temporary config leaves nothing elsewhere.
func recordPath(configPath string) string {
	return filepath.Join(filepath.Dir(configPath), "."+filepath.Base(configPath)+".daemon")
}

// WriteRecord records r (with this process's PID) for the daemon reading
// configPath, creating the config's directory (0700) when missing.
func WriteRecord(configPath string, r Record) error {
	r.PID = os.Getpid()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path := recordPath(configPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// RemoveRecord removes this process's record for configPath, leaving one
// another daemon wrote since.
func RemoveRecord(configPath string) {
	if r, ok := ReadRecord(configPath); ok && r.PID == os.Getpid() {
		_ = os.Remove(recordPath(configPath))
	}
}

// ReadRecord returns the record of a daemon reading configPath that is
// still running; ok is false when there is none (or it is left over from a
// daemon that died).
func ReadRecord(configPath string) (r Record, ok bool) {
	b, err := os.ReadFile(recordPath(configPath))
	if err != nil || json.Unmarshal(b, &r) != nil || r.PID <= 0 || r.Listen == "" {
		return Record{}, false
	}
	if err := syscall.Kill(r.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return Record{}, false
	}
	return r, true
}
