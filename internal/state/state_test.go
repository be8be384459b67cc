package state

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureTokenCreatesPrivateFileOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	tok, err := EnsureToken(dir)
	if err != nil || len(tok) != 64 {
		t.Fatalf("EnsureToken = %q, %v", tok, err)
	}
	fi, err := os.Stat(filepath.Join(dir, TokenFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	again, err := EnsureToken(dir)
	if err != nil || again != tok {
		t.Fatalf("second start changed the token: %q vs %q (%v)", again, tok, err)
	}
}

// A token others may have read is refused, saying what to do: one
// readable by the group or everyone, and one another user owns.
func TestTokenOthersMayReadRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "st")
	if _, err := EnsureToken(dir); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, TokenFile)
	for _, mode := range []os.FileMode{0o640, 0o604} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := EnsureToken(dir); err == nil || !strings.Contains(err.Error(), "is readable by others") || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("mode %04o: %v", mode, err)
		}
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(path, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := EnsureToken(dir); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("another user's token: %v", err)
		}
	}
}

func TestDirPrecedence(t *testing.T) {
	t.Setenv("WARDEN_STATE_DIR", "/env")
	t.Setenv("XDG_STATE_HOME", "/xdg")
	if got := Dir("/flag", "/cfg"); got != "/flag" {
		t.Fatalf("flag should win, got %s", got)
	}
	if got := Dir("", "/cfg"); got != "/env" {
		t.Fatalf("env should beat config, got %s", got)
	}
	t.Setenv("WARDEN_STATE_DIR", "")
	if got := Dir("", "/cfg"); got != "/cfg" {
		t.Fatalf("config stateDir, got %s", got)
	}
	if got := Dir("", ""); got != "/xdg/warden" {
		t.Fatalf("XDG_STATE_HOME, got %s", got)
	}
}

// Listen and Dial meet on the state dir's socket however deep the dir is
// (a socket's path is at most 108 bytes), Dial says when no daemon runs,
// and a state dir others may write to is refused: another user could have
// put a socket of their own there.
func TestSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 100), strings.Repeat("e", 100))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(t.Context(), dir); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("Dial with no daemon: %v, want ErrNoDaemon", err)
	}
	ln, err := Listen(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := Dial(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	c.Close()
	if string(b) != "hi" {
		t.Fatalf("read %q through the socket", b)
	}
	if fi, err := os.Stat(filepath.Join(dir, SocketFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi, err)
	}
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(t.Context(), dir); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("Dial into a group-writable state dir: %v", err)
	}
}
