package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Landlock's read rules without namespaces go around what is denied: no
// rule on a denied path, on a directory above one, or on a link that
// leads into one; a rule on everything beside them.
func TestReadRoots(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	for _, d := range []string{home + "/.ssh", home + "/notes"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(home+"/.netrc", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{"keys": ".ssh", "notes-link": "notes"} {
		if err := os.Symlink(to, filepath.Join(home, link)); err != nil {
			t.Fatal(err)
		}
	}
	roots := readRoots(withReal([]string{home + "/.ssh", home + "/.netrc"}))
	for _, want := range []string{home + "/notes", home + "/notes-link", "/usr"} {
		if !slices.Contains(roots, want) {
			t.Errorf("no rule for %s", want)
		}
	}
	for _, p := range roots {
		if within(dir, p) || within(p, home+"/.ssh") || p == home+"/.netrc" || p == home+"/keys" || p == home {
			t.Errorf("a rule for %s lets the server read what is denied", p)
		}
	}
}
