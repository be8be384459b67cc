// Package logfile is a stdio server's stderr log in the state dir: a file
// that rotates at a size cap (one old generation kept, as NAME.log.1), and a
// reader that prints its last lines and follows it across rotations, woken
// by each write rather than by polling.
package logfile

import (
	"bytes"
	"context"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
)

// File is an append-only log file that rotates at max bytes. It is safe for
// concurrent use; a server that floods its stderr costs at most twice max of
// disk.
type File struct {
	path string
	max  int64

	mu      sync.Mutex
	f       *os.File
	size    int64
	changed chan struct{} // closed and replaced at every write
}

// Open opens (creating) the log at path, rotating at max bytes.
func Open(path string, max int64) (*File, error) {
	l := &File{path: path, max: max, changed: make(chan struct{})}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Path is the file's path.
func (l *File) Path() string { return l.path }

// Changed is closed at the next write (or rotation).
func (l *File) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer func() {
		close(l.changed)
		l.changed = make(chan struct{})
	}()
	if l.f == nil {
		return len(p), nil // rotation failed earlier: drop rather than block the server
	}
	if l.size+int64(len(p)) > l.max {
		l.f.Close()
		l.f = nil
		_ = os.Rename(l.path, l.path+".1")
		if err := l.open(); err != nil {
			return len(p), nil
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// Close closes the file.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// tailWindow is how far from the end Tail looks for its lines.
const tailWindow = 256 << 10

// Copy writes the log's last n lines (all of the current file when n <= 0)
// to w, then, with follow, what is written after, until ctx is done; a
// rotation is followed into the new file. flush, if not nil, runs after
// each piece is written.
func (l *File) Copy(ctx context.Context, w io.Writer, n int, follow bool, flush func()) error {
	changed := l.Changed() // before reading: a write after this wakes us
	f, err := os.Open(l.path)
	if err != nil {
		return err
	}
	defer func() { f.Close() }()
	if err := tail(f, w, n); err != nil {
		return err
	}
	for follow {
		if flush != nil {
			flush()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
		changed = l.Changed()
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
		// Rotated: the old file is read to its end above; go on in the new.
		if cur, err := f.Stat(); err == nil {
			if now, err := os.Stat(l.path); err == nil && !os.SameFile(cur, now) {
				nf, err := os.Open(l.path)
				if err != nil {
					return err
				}
				f.Close()
				f = nf
				if _, err := io.Copy(w, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// tail writes the last n lines of f (all when n <= 0) and leaves f at its
// end.
func tail(f *os.File, w io.Writer, n int) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if n <= 0 {
		_, err := io.Copy(w, f)
		return err
	}
	start := max(fi.Size()-tailWindow, 0)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
		return err
	}
	if _, err := f.Seek(start+int64(len(buf)), io.SeekStart); err != nil {
		return err
	}
	_, err = w.Write(lastLines(buf, n))
	return err
}

// lastLines is the last n lines of b (a last line without its newline
// counts).
func lastLines(b []byte, n int) []byte {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end; i > 0; i-- {
		if b[i-1] == '\n' {
			n--
			if n == 0 {
				return b[i:]
			}
		}
	}
	return b
}

// Tail keeps the last lines written to it, each cut to a maximum length:
// what an error shows of a server's stderr.
type Tail struct {
	mu      sync.Mutex
	lines   []string
	partial []byte
	max     int // lines kept
	width   int // bytes per line
}

// NewTail keeps the last lines lines of at most width bytes each.
func NewTail(lines, width int) *Tail { return &Tail{max: lines, width: width} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	complete := bytes.LastIndexByte(t.partial, '\n') + 1
	for line := range bytes.SplitSeq(t.partial[:complete], []byte("\n")) {
		t.add(string(line))
	}
	t.partial = append(t.partial[:0], t.partial[complete:]...)
	if len(t.partial) > t.width { // an endless line: keep its start
		t.add(string(t.partial))
		t.partial = t.partial[:0]
	}
	return len(p), nil
}

func (t *Tail) add(line string) {
	if line = t.trim(line); line != "" {
		t.lines = keepLast(append(t.lines, line), t.max)
	}
}

// trim cuts a line to the tail's width, without trailing blanks or
// control characters (it is shown in terminals).
func (t *Tail) trim(line string) string {
	line = strings.Map(func(r rune) rune {
		if r < ' ' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, line)
	line = strings.TrimRight(line, " \t")
	if len(line) > t.width {
		line = strings.ToValidUTF8(line[:t.width], "") + "…"
	}
	return line
}

func keepLast(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// Lines is what the tail holds, oldest first, with an unfinished last line.
func (t *Tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.Clone(t.lines)
	if last := t.trim(string(t.partial)); last != "" {
		out = keepLast(append(out, last), t.max)
	}
	return out
}
