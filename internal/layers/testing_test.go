package layers

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNothingRunsBackUp: test support (internal/testing/...) imports the
// daemon to run it, so no production package may import test support; then
// the imports drawn show the layers with no arrow running back up.
func TestNothingRunsBackUp(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	support := module + "/internal/testing/"
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || rel == filepath.Join("internal", "testing")) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, build.ImportComment)
		if err != nil {
			return nil // no Go files here
		}
		checked++
		for _, imp := range p.Imports { // production files only, not _test.go
			if strings.HasPrefix(imp+"/", support) {
				t.Errorf("%s (production code) imports test support %s", rel, imp)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d packages under %s; is it the module's root?", checked, root)
	}
}
