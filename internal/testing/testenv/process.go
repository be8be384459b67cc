package testenv

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a child started by StartProcess. Do not call Cmd.Wait: the
// Process waits for it; use Done, Wait or Err.
type Process struct {
	Cmd *exec.Cmd

	done chan struct{}
	err  error
	out  *tailBuffer
	stop sync.Once
}

// StartProcess starts cmd in its own process group (with SIGKILL as its
// parent-death signal), and in t.Cleanup stops the whole group (SIGTERM, then
// SIGKILL after 3s) and waits for the process. A nil Stdout or Stderr is
// captured and printed to the test log if the test failed. The returned
// Process can be ignored.
func StartProcess(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if !cmd.SysProcAttr.Setsid { // a session leader already leads its own group
		cmd.SysProcAttr.Setpgid = true
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	if cmd.Stdout == nil || cmd.Stderr == nil {
		p.out = &tailBuffer{max: 256 << 10}
		if cmd.Stdout == nil {
			cmd.Stdout = p.out
		}
		if cmd.Stderr == nil {
			cmd.Stderr = p.out
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("testenv: starting %s: %v", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Stop() {
			t.Errorf("testenv: %s (pid %d) did not exit after SIGKILL", cmd.Path, p.PID())
		}
		if t.Failed() && p.out != nil {
			t.Logf("output of %s (pid %d), last %d bytes:\n%s", cmd.String(), p.PID(), p.out.Len(), p.out.String())
		}
	})
	return p
}

// PID is the process id (also its process group id).
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited and been waited for.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the result of waiting for the process; valid once Done is closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// ErrWaitTimeout is returned by Wait when the process is still running.
var ErrWaitTimeout = errors.New("process still running")

// Wait waits up to timeout for the process to exit and returns its exit error
// (nil for status 0), or ErrWaitTimeout.
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s (pid %d): %w after %s", p.Cmd.Path, p.PID(), ErrWaitTimeout, timeout)
	}
}

// Signal sends sig to the process only.
func (p *Process) Signal(sig syscall.Signal) error { return syscall.Kill(p.PID(), sig) }

// SignalGroup sends sig to the process's whole group.
func (p *Process) SignalGroup(sig syscall.Signal) error { return syscall.Kill(-p.PID(), sig) }

// Kill sends SIGKILL to the process group and waits for the process.
func (p *Process) Kill() {
	p.SignalGroup(syscall.SIGKILL)
	<-p.done
}

// Stop ends the process group: SIGTERM, then SIGKILL after 3s, and waits. It
// also kills what is left of the group after the process itself exited. It
// reports whether the process has exited. Safe to call more than once.
func (p *Process) Stop() bool {
	p.stop.Do(func() {
		if !p.Exited() {
			p.SignalGroup(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(3 * time.Second):
			}
		}
		p.SignalGroup(syscall.SIGKILL) // the process or its leftovers; ESRCH is fine
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	})
	return p.Exited()
}

// Output returns the captured output (stdout and/or stderr the caller left
// nil), at most the last 256 KiB.
func (p *Process) Output() string {
	if p.out == nil {
		return ""
	}
	return p.out.String()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	if len(b.b) > 2*b.max {
		b.b = append(b.b[:0], b.b[len(b.b)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.b) > b.max {
		return string(b.b[len(b.b)-b.max:])
	}
	return string(b.b)
}

func (b *tailBuffer) Len() int { return len(b.String()) }

// Run runs bin with args to its end (stdin empty; env nil means this
// process's) and returns its exit status and output; only a failure to run
// it at all fails the test.
func Run(t testing.TB, bin string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader("")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s %s: %v", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}
