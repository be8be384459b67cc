package wardentest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// WriteFileAtomic replaces path with content the way editors do (a temp
// file renamed over it), so a watcher never reads a half-written file.
func WriteFileAtomic(t testing.TB, path string, content []byte, perm os.FileMode) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, content, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// EditConfig rewrites the config file at path (atomically, keeping listen
// and everything else) after edit changes its mcpServers map; a nil edit
// rewrites the same content, which the daemon sees as a reload.
func EditConfig(t testing.TB, path string, edit func(servers map[string]any)) {
	t.Helper()
	var whole func(cfg map[string]any)
	if edit != nil {
		whole = func(cfg map[string]any) { edit(cfg["mcpServers"].(map[string]any)) }
	}
	EditConfigFile(t, path, whole)
}

// EditConfigFile rewrites the plain JSON config at path atomically after
// edit changes it; a nil edit writes the same bytes again.
func EditConfigFile(t testing.TB, path string, edit func(cfg map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("%s: wardentest configs are plain JSON: %v", path, err)
	}
	if edit != nil {
		edit(cfg)
		if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
			t.Fatal(err)
		}
	}
	WriteFileAtomic(t, path, b, 0o600)
}

// Reloads counts the config reloads the daemon has applied, from its log.
func (w *Warden) Reloads() int { return strings.Count(w.Logs.String(), "config reloaded") }

// Reload rewrites the config through edit (see EditConfig) and waits until
// the daemon has applied it.
func (w *Warden) Reload(t testing.TB, edit func(servers map[string]any)) {
	t.Helper()
	n := w.Reloads()
	EditConfig(t, w.ConfigPath, edit)
	WaitFor(t, 20*time.Second, "the config reload", func() bool { return w.Reloads() > n })
}
