package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// A server may leave links in its own directory, pointing anywhere: its
// next start must not create its places through them, outside it.
func TestOwnPlacesFollowNoLink(t *testing.T) {
	state, outside := t.TempDir(), t.TempDir()
	own, err := ownPlaces(state, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"cache", "config"} {
		if err := os.RemoveAll(filepath.Join(own, dir)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(own, dir)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = ownPlaces(state, "s")
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Fatalf("the start made %v in the directory the server's links point to", entries)
	}
	if err == nil || !strings.Contains(err.Error(), "own directory") {
		t.Fatalf("err = %v, want one about the server's own directory", err)
	}
}
