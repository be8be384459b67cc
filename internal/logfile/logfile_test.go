package logfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A flooding stdio server's stderr log is rotated, so it cannot fill the disk.
func TestFileRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log")
	w, err := Open(path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
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

// Copy prints the last lines, then follows the log line by line, also into
// the new file after a rotation, and nothing is lost or repeated.
func TestCopyFollowsAcrossRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.log")
	f, err := Open(path, 200)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 5 {
		fmt.Fprintf(f, "line %d\n", i)
	}
	var last bytes.Buffer
	if err := f.Copy(t.Context(), &last, 2, false, nil); err != nil {
		t.Fatal(err)
	}
	if last.String() != "line 3\nline 4\n" {
		t.Fatalf("last 2 lines: %q", last.String())
	}

	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Copy(ctx, pw, 1, true, nil); pw.Close() }()
	got := make(chan string, 100)
	go func() {
		b := make([]byte, 4096)
		var acc string
		for {
			n, err := pr.Read(b)
			acc += string(b[:n])
			for {
				i := strings.IndexByte(acc, '\n')
				if i < 0 {
					break
				}
				got <- acc[:i]
				acc = acc[i+1:]
			}
			if err != nil {
				close(got)
				return
			}
		}
	}()
	if l := <-got; l != "line 4" {
		t.Fatalf("first line followed: %q", l)
	}
	// Each line written is read before the next: 40 lines of 10 bytes
	// through a 200-byte file rotate it twice.
	for i := 5; i < 45; i++ {
		line := fmt.Sprintf("line %03d", i)
		fmt.Fprintln(f, line)
		if l := <-got; l != line {
			t.Fatalf("followed %q, want %q", l, line)
		}
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Fatal("the log never rotated")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for l := range got {
		t.Fatalf("more lines than written: %q", l)
	}
}

// A Tail keeps the last lines, cut to their width, without blank ones, and
// an unfinished last line.
func TestTailKeepsLastLines(t *testing.T) {
	tl := NewTail(3, 10)
	io.WriteString(tl, "one\n\ntwo\r\nthr\x1b")
	io.WriteString(tl, "ee\n"+strings.Repeat("é", 20)+"\nfive")
	got := tl.Lines()
	want := []string{"three", "ééééé…", "five"}
	if !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
}
