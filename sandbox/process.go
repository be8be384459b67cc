package sandbox

import (
	"errors"
	"strconv"
	"syscall"
)

// Process is a stdio server Warden started.
type Process struct {
	done   chan struct{}
	err    error // how it exited, once done is closed
	signal func(syscall.Signal) error
}

func newProcess(signal func(syscall.Signal) error) *Process {
	return &Process{done: make(chan struct{}), signal: signal}
}

// Done is closed when the server has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the server exited, once Done is closed: nil for status 0,
// else "exit status N" or "signal: killed" and the like.
func (p *Process) Err() error { return p.err }

// Signal sends sig to the server's process group.
func (p *Process) Signal(sig syscall.Signal) error { return p.signal(sig) }

func (p *Process) exit(err error) {
	p.err = err
	close(p.done)
}

// waitError words a wait status as os/exec does; nil for a clean exit.
func waitError(ws syscall.WaitStatus) error {
	switch {
	case ws.Exited() && ws.ExitStatus() == 0:
		return nil
	case ws.Exited():
		return errors.New("exit status " + strconv.Itoa(ws.ExitStatus()))
	case ws.Signaled():
		return errors.New("signal: " + ws.Signal().String())
	}
	return errors.New("wait status " + strconv.Itoa(int(ws)))
}
