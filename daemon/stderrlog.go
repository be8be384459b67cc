package daemon

import (
	"io"
	"os"
	"path/filepath"
	"sync"
)

// maxStderrLog is how large a stdio server's stderr log grows before it is
// rotated (one old generation is kept, as NAME.log.1).
const maxStderrLog = 10 << 20

// stderrLog opens a stdio server's stderr log in the state dir. A server
// that floods its stderr costs at most twice maxStderrLog of disk.
func (d *Daemon) stderrLog(server string) io.Writer {
	dir := filepath.Join(d.StateDir, "logs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return io.Discard
	}
	w := &rotating{path: filepath.Join(dir, server+".log"), max: maxStderrLog}
	if err := w.open(); err != nil {
		return io.Discard
	}
	return w
}

// rotating is an append-only file that rotates at max bytes.
type rotating struct {
	path string
	max  int64

	mu   sync.Mutex
	f    *os.File
	size int64
}

func (r *rotating) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, fi.Size()
	return nil
}

func (r *rotating) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return len(p), nil // rotation failed earlier: drop rather than block the server
	}
	if r.size+int64(len(p)) > r.max {
		r.f.Close()
		r.f = nil
		_ = os.Rename(r.path, r.path+".1")
		if err := r.open(); err != nil {
			return len(p), nil
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}
