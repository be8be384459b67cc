package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFiles writes each of files (a path relative to dir, or absolute)
// with its text, mode 0600, making the directories it needs.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		path := rel
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, rel)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
