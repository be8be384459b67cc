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

func TestRecord(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "sub", "config.json")
	if _, ok := ReadRecord(cfg); ok {
		t.Fatal("a record before any was written")
	}
	if err := WriteRecord(cfg, Record{Listen: "127.0.0.1:9", StateDir: "/st"}); err != nil {
		t.Fatal(err)
	}
	r, ok := ReadRecord(cfg)
	if !ok || r.Listen != "127.0.0.1:9" || r.StateDir != "/st" || r.PID != os.Getpid() {
		t.Fatalf("ReadRecord = %+v, %v", r, ok)
	}
	// A record left by a daemon that died is not taken.
	if err := os.WriteFile(recordPath(cfg), []byte(`{"pid": 2147483647, "listen": "127.0.0.1:9"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := ReadRecord(cfg); ok {
		t.Fatal("took the record of a process that is gone")
	}
	RemoveRecord(cfg) // not ours: stays
	if _, err := os.Stat(recordPath(cfg)); err != nil {
		t.Fatal("removed another daemon's record")
	}
	_ = WriteRecord(cfg, Record{Listen: "127.0.0.1:9"})
	RemoveRecord(cfg)
	if _, err := os.Stat(recordPath(cfg)); !os.IsNotExist(err) {
		t.Fatalf("record left after RemoveRecord: %v", err)
	}
}
