package upstream

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/logfile"
	"github.com/wardenmcp/warden/sandbox"
)

// stdioTransport starts a stdio server in its own process group, confined
// by the launcher (package sandbox). Stopping closes stdin, then sends
// SIGTERM, then SIGKILL to the whole group, so a server's children (npx →
// node) go too.
type stdioTransport struct {
	cfg       *config.Server
	launcher  *sandbox.Launcher
	stderr    io.Writer // per-server log
	graceTime time.Duration

	tail *logfile.Tail // the last lines of this start's stderr
	proc *process
}

// What a failed start shows of the server's stderr (in status, refusals):
// the last stderrLines lines, each cut to stderrWidth bytes.
const (
	stderrLines  = 10
	stderrWidth  = 300
	stderrBuffer = 2048
)

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	spec := sandbox.Spec{Name: t.cfg.Name, Command: t.cfg.Command, Args: t.cfg.Args, Env: t.cfg.Env, Dir: t.cfg.Cwd,
		InheritEnv: t.cfg.InheritEnv, InheritAllEnv: t.cfg.InheritAllEnv,
		NoNetwork: t.cfg.Sandbox.NoNetwork, Paths: t.cfg.Sandbox.Paths, Read: t.cfg.Sandbox.Read, Write: t.cfg.Sandbox.Write}
	if t.cfg.Sandbox.Image != "" {
		spec.Container = &sandbox.Container{Engine: t.cfg.Sandbox.Engine, Image: t.cfg.Sandbox.Image}
	}
	t.tail = logfile.NewTail(stderrLines, stderrWidth)
	stderr := &redactingWriter{w: io.MultiWriter(t.stderr, t.tail), cfg: t.cfg}
	// The server's ends of three pipes. An os.Pipe end takes write
	// deadlines: a server that stops reading must not hold a write, and
	// the write gate with it, forever.
	var ours, theirs [3]*os.File
	for i := range ours {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ours[:i], theirs[:i])
			return nil, err
		}
		if i == 0 { // stdin: the server reads
			r, w = w, r
		}
		ours[i], theirs[i] = r, w
	}
	stdin, stdout, stderrR := ours[0], ours[1], ours[2]
	proc, err := t.launcher.Start(ctx, spec, theirs[0], theirs[1], theirs[2])
	closeAll(theirs[:]) // the server has its own copies
	if err != nil {
		closeAll(ours[:])
		fmt.Fprintf(stderr, "warden launcher: %v\n", err)
		stderr.Flush()
		return nil, &exitError{Err: fmt.Errorf("start %q: %w", t.cfg.Command, err), Stderr: t.tail.Lines()}
	}
	copied := make(chan struct{})
	go func() {
		// A small buffer, for each server for as long as it runs: io.Copy's
		// would be 32 KiB (hiding the file's WriteTo, which takes none).
		_, _ = io.CopyBuffer(stderr, struct{ io.Reader }{stderrR}, make([]byte, stderrBuffer))
		stderrR.Close()
		close(copied)
	}()
	p := &process{proc: proc, stdin: stdin, grace: t.graceTime, exited: make(chan struct{})}
	t.proc = p
	go func() {
		<-proc.Done()
		select { // its last words, unless something it left holds stderr
		case <-copied:
		case <-time.After(time.Second):
		}
		stderr.Flush()
		p.waitErr = proc.Err()
		close(p.exited)
	}()
	inner, err := (&mcp.IOTransport{Reader: stdout, Writer: p}).Connect(ctx)
	if err != nil {
		p.Close()
		stdout.Close()
		return nil, err
	}
	return inner, nil
}

func closeAll(files ...[]*os.File) {
	for _, fs := range files {
		for _, f := range fs {
			f.Close()
		}
	}
}

// stdinTimeout bounds one write to a stdio server.
var stdinTimeout = 10 * time.Second // a variable for tests

// process is the write side of a stdio server; closing it stops the server.
type process struct {
	proc    *sandbox.Process
	stdin   *os.File
	grace   time.Duration
	exited  chan struct{}
	waitErr error // how it exited, once exited is closed
	once    sync.Once
}

// exitError is a failed start of a stdio server whose process had exited:
// the last lines of its stderr (secrets masked) usually say why.
type exitError struct {
	Err    error
	Exit   string   // "exit status 127"; "" when it never started
	Stderr []string // its last stderr lines
}

func (e *exitError) Error() string {
	if e.Exit == "" { // it never started
		return e.Err.Error()
	}
	return fmt.Sprintf("%v (the server exited: %s)", e.Err, e.Exit)
}
func (e *exitError) Unwrap() error { return e.Err }

// explain adds to err, from a failed start, how the server's process
// exited and the last lines of its stderr; a process still running (a
// start that timed out before Close) adds nothing.
func (t *stdioTransport) explain(err error) error {
	if t.proc == nil {
		return err
	}
	select {
	case <-t.proc.exited:
	default:
		return err
	}
	exit := "exit status 0"
	if t.proc.waitErr != nil {
		exit = t.proc.waitErr.Error()
	}
	return &exitError{Err: err, Exit: exit, Stderr: t.tail.Lines()}
}

func (p *process) Write(b []byte) (int, error) {
	_ = p.stdin.SetWriteDeadline(time.Now().Add(stdinTimeout))
	n, err := p.stdin.Write(b)
	if err != nil {
		err = fmt.Errorf("writing to the server's stdin (it has not read for %s?): %w", stdinTimeout, err)
	}
	return n, err
}

// Close stops the server the way the MCP spec asks: close stdin, wait, SIGTERM,
// wait, SIGKILL; each signal goes to the whole process group.
func (p *process) Close() error {
	p.once.Do(func() {
		_ = p.stdin.Close()
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			select {
			case <-p.exited:
				_ = p.proc.Signal(syscall.SIGKILL) // leftovers of the group
				return
			case <-time.After(p.grace):
			}
			_ = p.proc.Signal(sig)
		}
		<-p.exited
	})
	return nil
}
