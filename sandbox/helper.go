package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wardenmcp/warden/internal/launcher"
	"golang.org/x/sys/unix"
)

// helper is Warden's side of the resident launcher: its process and the
// control socket on which it is asked to start and signal servers.
type helper struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the launcher's process is gone
	conn   *net.UnixConn
	wmu    sync.Mutex // one message at a time

	mu    sync.Mutex
	next  uint64
	procs map[uint64]*launched
	gone  error // why the launcher is no longer there
}

// launched is one server asked of the launcher: its start's answer, then
// its process.
type launched struct {
	started chan error
	running bool // started, and not yet exited
	proc    *Process
}

// readyTimeout bounds the launcher's set-up.
const readyTimeout = 10 * time.Second

// startHelper starts the launcher, in namespaces or not, and waits until it
// is set up; its error says why it could not be.
func startHelper(self string, namespaces bool) (*helper, error) {
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "launcher control"), os.NewFile(uintptr(pair[1]), "launcher control")
	defer theirs.Close()
	fc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		return nil, err
	}
	h := &helper{conn: fc.(*net.UnixConn), exited: make(chan struct{}), procs: map[uint64]*launched{}}
	log := &setupLog{}
	h.cmd = exec.Command(self)
	h.cmd.Env = []string{launcher.Env + "=" + launcher.Plan{Namespaces: namespaces}.Encode()}
	h.cmd.Dir = "/"
	h.cmd.Stderr = log
	h.cmd.ExtraFiles = []*os.File{theirs}
	attr := &syscall.SysProcAttr{Setpgid: true}
	if namespaces {
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		// The launcher keeps Warden's uid, so without ambient capabilities
		// a user other than root would lose them at exec, before its
		// mounts. A server gets none of them.
		attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	}
	h.cmd.SysProcAttr = attr
	if err := startDumpable(h.cmd, namespaces); err != nil {
		h.conn.Close()
		return nil, err
	}
	go func() {
		_ = h.cmd.Wait()
		close(h.exited)
	}()
	r := bufio.NewReader(h.conn)
	_ = h.conn.SetReadDeadline(time.Now().Add(readyTimeout))
	m, err := readMsg(r)
	_ = h.conn.SetReadDeadline(time.Time{})
	if err != nil || m.Kind != "ready" {
		h.conn.Close()
		select {
		case <-h.exited:
		case <-time.After(readyTimeout):
			_ = h.cmd.Process.Kill()
		}
		if msg := log.setup(); msg != "" {
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("the launcher did not start: %v", err)
	}
	log.ready()
	go h.read(r)
	return h, nil
}

// startDumpable starts cmd, with Warden dumpable for that moment when cmd
// gets a user namespace: Warden writes its uid and gid maps in /proc, which
// a non-dumpable process's child keeps to root until it execs (Warden is
// made non-dumpable after its first launcher; this is for a later one).
func startDumpable(cmd *exec.Cmd, userns bool) error {
	if d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); userns && d == 0 {
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
		defer ProtectSelf()
	}
	return cmd.Start()
}

// start asks the launcher to start s with the three files and waits for
// its answer.
func (h *helper) start(ctx context.Context, s launcher.Start, stdin, stdout, stderr *os.File) (*Process, error) {
	h.mu.Lock()
	if h.gone != nil {
		h.mu.Unlock()
		return nil, h.gone
	}
	h.next++
	id := h.next
	l := &launched{started: make(chan error, 1)}
	l.proc = newProcess(func(sig syscall.Signal) error {
		return h.send(launcher.Msg{Kind: "signal", ID: id, Signal: int(sig)})
	})
	h.procs[id] = l
	h.mu.Unlock()
	err := h.send(launcher.Msg{Kind: "start", ID: id, Start: s}, stdin, stdout, stderr)
	if err == nil {
		select {
		case err = <-l.started:
		case <-ctx.Done():
			// The start may still happen: the process is then stopped
			// as soon as it is known.
			err = ctx.Err()
			go func() {
				if <-l.started == nil {
					_ = l.proc.Signal(syscall.SIGKILL)
				}
			}()
		}
	}
	if err != nil {
		return nil, err
	}
	return l.proc, nil
}

// send writes m, with files attached, on the control socket.
func (h *helper) send(m launcher.Msg, files ...*os.File) error {
	enc := m.Encode()
	if len(enc) > launcher.MaxMsg {
		return fmt.Errorf("the server's command line and environment take %d bytes, more than the %d the launcher takes; shorten them", len(enc), launcher.MaxMsg)
	}
	b := launcher.Frame(enc)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = syscall.UnixRights(fds...)
	}
	h.wmu.Lock()
	defer h.wmu.Unlock()
	n, _, err := h.conn.WriteMsgUnix(b, oob, nil)
	if err == nil && n < len(b) {
		_, err = h.conn.Write(b[n:])
	}
	if err != nil {
		return fmt.Errorf("the launcher: %w", err)
	}
	return nil
}

// read takes the launcher's answers until it is gone.
func (h *helper) read(r *bufio.Reader) {
	for {
		m, err := readMsg(r)
		if err != nil {
			h.goneWith(err)
			return
		}
		h.mu.Lock()
		l := h.procs[m.ID]
		switch {
		case l == nil:
		case m.Kind == "started":
			l.running = true
			l.started <- nil
		case m.Kind == "failed":
			delete(h.procs, m.ID)
			l.started <- errors.New(m.Error)
		case m.Kind == "exited":
			delete(h.procs, m.ID)
			l.proc.exit(waitError(syscall.WaitStatus(m.Status)))
		}
		h.mu.Unlock()
	}
}

// lost is why the launcher is gone, nil while it runs.
func (h *helper) lost() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gone
}

// goneWith ends every server's wait when the launcher is gone (its death
// killed them), saying err, and refuses starts from then on.
func (h *helper) goneWith(err error) {
	select {
	case <-h.exited:
	case <-time.After(time.Second):
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gone == nil {
		h.gone = fmt.Errorf("the launcher of stdio servers has exited (%v)", err)
	}
	for id, l := range h.procs {
		delete(h.procs, id)
		if l.running { // its process went with the launcher
			l.proc.exit(h.gone)
		} else {
			l.started <- h.gone
		}
	}
}

// close closes the control socket, which stops the launcher and any server
// left, and waits for it to go.
func (h *helper) close() {
	h.conn.Close()
	select {
	case <-h.exited:
	case <-time.After(5 * time.Second):
		_ = h.cmd.Process.Kill()
	}
}

// readMsg reads one framed message.
func readMsg(r *bufio.Reader) (launcher.Msg, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return launcher.Msg{}, err
	}
	n, err := launcher.FrameSize(head)
	if err != nil {
		return launcher.Msg{}, err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return launcher.Msg{}, err
	}
	return launcher.DecodeMsg(b)
}

// setupLog is the launcher's stderr: kept, to say why it failed, until it
// is set up, then passed on to Warden's.
type setupLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	started bool
}

func (s *setupLog) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return os.Stderr.Write(b)
	}
	if s.buf.Len() < 4096 {
		s.buf.Write(b)
	}
	return len(b), nil
}

func (s *setupLog) ready() {
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
}

func (s *setupLog) setup() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(s.buf.String())
}
