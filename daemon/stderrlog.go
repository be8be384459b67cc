package daemon

import (
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/wardenmcp/warden/internal/logfile"
)

// maxStderrLog is how large a stdio server's stderr log grows before it is
// rotated (one old generation is kept, as NAME.log.1).
const maxStderrLog = 10 << 20

// serverLogs are the stdio servers' stderr logs in the state dir, one open
// file per server however often it restarts.
type serverLogs struct {
	dir string
	mu  sync.Mutex
	m   map[string]*logfile.File
}

// file opens (once) server's log.
func (l *serverLogs) file(server string) (*logfile.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.m[server]; f != nil {
		return f, nil
	}
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, err
	}
	f, err := logfile.Open(filepath.Join(l.dir, server+".log"), maxStderrLog)
	if err != nil {
		return nil, err
	}
	if l.m == nil {
		l.m = map[string]*logfile.File{}
	}
	l.m[server] = f
	return f, nil
}

// writer is where a stdio server's stderr goes.
func (l *serverLogs) writer(server string) io.Writer {
	f, err := l.file(server)
	if err != nil {
		return io.Discard
	}
	return f
}

func (l *serverLogs) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.m {
		_ = f.Close()
	}
	l.m = nil
}
