// Package state finds Warden's state dir, and the operator token and the
// daemon's socket in it. The daemon and the CLI resolve the dir the same
// way, so the CLI finds the daemon it talks to.
package state

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// TokenFile is the operator token's name in the state dir.
const TokenFile = "api-token"

// StoreFile is the embedded store's name in the state dir.
const StoreFile = "warden.db"

// Dir returns the state dir: flag, else $WARDEN_STATE_DIR, else the config's
// stateDir, else $XDG_STATE_HOME/warden, else ~/.local/state/warden.
func Dir(flag, configured string) string {
	for _, d := range []string{flag, os.Getenv("WARDEN_STATE_DIR"), configured} {
		if d != "" {
			return d
		}
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "warden")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "warden")
}

// EnsureToken returns the operator token, creating the state dir (0700) and
// the token file (0600) on first start.
func EnsureToken(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state dir %s: %w", dir, err)
	}
	tok, err := ReadToken(dir)
	if err == nil {
		return tok, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok = hex.EncodeToString(b)
	path := filepath.Join(dir, TokenFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another start won the race
		return ReadToken(dir)
	}
	if err != nil {
		return "", fmt.Errorf("creating %s: %w", path, err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return tok, f.Close()
}

// ReadToken reads the operator token, refusing one that others may have
// read: a token of another user, or readable by anyone but its owner, is
// no operator's secret.
func ReadToken(dir string) (string, error) {
	path := filepath.Join(dir, TokenFile)
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return "", fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): delete it and restart warden serve to make a new one", path, st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s is readable by others (mode %04o), who may have read the operator token: delete it and restart warden serve to make a new one (or, if no one else could have, chmod 600 %s)", path, perm, path)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty: delete it and restart warden serve to create a new one", filepath.Join(dir, TokenFile))
	}
	return tok, nil
}
