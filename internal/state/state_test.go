package state

import (
	"os"
	"path/filepath"
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
