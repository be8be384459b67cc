package daemon

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A flooding stdio server's stderr log is rotated, so it cannot fill the disk.
func TestStderrLogRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log")
	w := &rotating{path: path, max: 1000}
	if err := w.open(); err != nil {
		t.Fatal(err)
	}
	line := bytes.Repeat([]byte("x"), 99)
	line = append(line, '\n')
	for range 35 { // 3500 bytes through a 1000-byte log
		if _, err := w.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{path, path + ".1"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 1000 {
			t.Fatalf("%s is %d bytes, more than the 1000-byte cap", p, fi.Size())
		}
	}
	if _, err := os.Stat(path + ".2"); err == nil {
		t.Fatal("only one old generation should be kept")
	}
}
