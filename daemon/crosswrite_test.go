package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A stdio server whose envFile lies where another may write is not
// loaded, at a start and at a reload, and the status says why; the
// writer runs. At a reload the refused server does not keep the entry
// it ran with: what it would start from is in the other's hands now.
func TestCrossWritesRefused(t *testing.T) {
	dir := t.TempDir()
	aCwd := filepath.Join(dir, "a")
	if err := os.MkdirAll(aCwd, 0o700); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(aCwd, ".env")
	if err := os.WriteFile(envFile, []byte("K=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := map[string]any{"command": "sh", "args": []string{"-c", "sleep 60"}, "cwd": aCwd}
	b := map[string]any{"command": "sh", "args": []string{"-c", "sleep 60"}, "envFile": envFile}
	refused := func(w *wardentest.Warden) {
		t.Helper()
		st := status(t, w)
		if len(st.Servers) != 2 {
			t.Fatalf("servers %+v, want a and b", st.Servers)
		}
		if e := w.Server(t, "a").ConfigError; e != "" {
			t.Errorf("a: config error %q", e)
		}
		e := w.Server(t, "b").ConfigError
		for _, want := range []string{"mcpServers.b.envFile", envFile, `server "a"`, "not loaded", "move it out of " + aCwd} {
			if !strings.Contains(e, want) {
				t.Errorf("b's config error %q does not say %q", e, want)
			}
		}
		if strings.Contains(e, "still running") {
			t.Errorf("b kept its entry: %q", e)
		}
	}

	w := wardentest.Start(t, map[string]any{"a": a, "b": b})
	refused(w)

	w2 := wardentest.Start(t, map[string]any{"b": b})
	ev := w2.FollowEvents(t)
	w2.Reload(t, func(s map[string]any) { s["a"] = a })
	configEvent(t, ev, "applied")
	refused(w2)
}
