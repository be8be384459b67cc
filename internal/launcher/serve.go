package launcher

import (
	"errors"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// launcher is the resident launcher's state.
type launcher struct {
	plan    Plan
	lastCap int // the highest capability, to drop them all
	abi     int // Landlock's ABI, 0 without Landlock

	wmu sync.Mutex // one message at a time on the control socket

	// mu orders a server's "started" before its "exited": a start holds it
	// from fork to answer, and the reaper holds it from reaping a PID to
	// forgetting it, so that a new server given the same PID is not taken
	// for the old one.
	mu       sync.Mutex
	servers  map[int]*child // by PID (in the launcher's namespace)
	stopping bool           // Warden has gone: no server starts now
}

// child is a server the launcher started.
type child struct {
	id     uint64
	exited chan struct{}
}

// serve answers Warden's requests until the control socket closes (Warden
// stopped or died), then stops every server.
func serve(p Plan) int {
	l := &launcher{plan: p, lastCap: readLastCap(), abi: LandlockABI(), servers: map[int]*child{}}
	// Only the closing of the control socket stops the launcher: a server
	// (without namespaces, of the same user) must not stop the others.
	// Caught, not ignored: a server would inherit an ignored signal.
	stopSigs := make(chan os.Signal, 1)
	signal.Notify(stopSigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for range stopSigs {
		}
	}()
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	go l.reap(chld)
	l.send(Msg{Kind: "ready"})
	for {
		m, files, err := receive(ControlFD)
		if err != nil {
			break
		}
		switch m.Kind {
		case "start":
			go l.start(m.ID, m.Start, files)
		case "signal":
			l.signal(m.ID, syscall.Signal(m.Signal))
		}
	}
	l.stop()
	return 0
}

// start starts one server from a thread of its own, which it leaves
// confined as the server is: the thread ends with this goroutine. Without
// namespaces the thread lives as long as the server, whose parent-death
// signal it is: a server that kills the launcher takes the others with it,
// not leaving them to outlive Warden.
func (l *launcher) start(id uint64, s Start, files []int) {
	runtime.LockOSThread() // never unlocked
	c, err := l.spawn(id, s, files)
	for _, fd := range files {
		syscall.Close(fd)
	}
	if err != nil {
		l.send(Msg{Kind: "failed", ID: id, Error: err.Error()})
		return
	}
	if !l.plan.Namespaces {
		<-c.exited
	}
}

func (l *launcher) spawn(id uint64, s Start, files []int) (*child, error) {
	if len(files) != 3 || len(s.Argv) == 0 {
		return nil, errors.New("a start needs a command and three files")
	}
	sys := &syscall.SysProcAttr{Setsid: true}
	if l.plan.Namespaces {
		if err := l.confine(s); err != nil {
			return nil, err
		}
		// PID 1 of its own namespace: it sees and signals only its
		// processes, and its exit kills them all.
		sys.Cloneflags = syscall.CLONE_NEWPID
		if s.NoNetwork {
			sys.Cloneflags |= syscall.CLONE_NEWNET
		}
	} else {
		if err := syscall.Unshare(syscall.CLONE_FS); err != nil { // for the Chdir below
			return nil, errors.New("own working directory: " + err.Error())
		}
		sys.Pdeathsig = syscall.SIGKILL
	}
	// In the server's directory, for its PATH's relative entries too.
	if err := syscall.Chdir(s.Dir); s.Dir != "" && err != nil {
		return nil, errors.New("cwd " + s.Dir + ": " + err.Error())
	}
	if err := clearInheritable(); err != nil {
		return nil, errors.New("capabilities: " + err.Error())
	}
	_ = prctl(prCapAmbient, prCapAmbientClearAll) // kernels before 4.3 have none
	if err := prctl(prSetNoNewPrivs, 1); err != nil {
		return nil, errors.New("no_new_privs: " + err.Error())
	}
	if err := restrict(s, l.abi, l.plan.Namespaces); err != nil {
		return nil, errors.New("landlock: " + err.Error())
	}
	path, err := LookPath(s.Argv[0], s.Env)
	if err != nil {
		return nil, err
	}
	fds := []uintptr{uintptr(files[0]), uintptr(files[1]), uintptr(files[2])}
	l.mu.Lock()
	defer l.mu.Unlock()
	// A start Warden asked for just before it died would otherwise fork
	// after stop has looked for servers to kill.
	if l.stopping {
		return nil, errors.New("Warden has gone")
	}
	pid, err := syscall.ForkExec(path, s.Argv, &syscall.ProcAttr{Env: s.Env, Files: fds, Sys: sys})
	if err != nil {
		return nil, errors.New("exec " + strconv.Quote(s.Argv[0]) + ": " + err.Error())
	}
	c := &child{id: id, exited: make(chan struct{})}
	l.servers[pid] = c
	l.send(Msg{Kind: "started", ID: id})
	return c, nil
}

// signal sends sig to a server's process group.
func (l *launcher) signal(id uint64, sig syscall.Signal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for pid, c := range l.servers {
		if c.id == id {
			_ = syscall.Kill(-pid, sig)
		}
	}
}

// reap collects every child's exit as SIGCHLD tells of it: servers', which
// it reports, and, as PID 1 or subreaper, every orphan's.
func (l *launcher) reap(chld <-chan os.Signal) {
	for range chld {
		for {
			l.mu.Lock()
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				l.mu.Unlock()
				break
			}
			c := l.servers[pid]
			delete(l.servers, pid)
			if c != nil && !l.plan.Namespaces {
				// Without a PID namespace to end with it, what the
				// server left in its session goes now.
				killSession(pid, syscall.SIGKILL)
			}
			l.mu.Unlock()
			if c != nil {
				close(c.exited)
				l.send(Msg{Kind: "exited", ID: c.id, Status: int(ws)})
			}
		}
	}
}

// stop ends every server when Warden has gone. In namespaces the
// launcher's exit does it; without, the servers' sessions get SIGTERM, a
// moment, then SIGKILL, and so does every process left to the launcher.
func (l *launcher) stop() {
	l.mu.Lock()
	l.stopping = true
	servers := maps.Clone(l.servers)
	l.mu.Unlock()
	if l.plan.Namespaces {
		return
	}
	for pid := range servers {
		killSession(pid, syscall.SIGTERM)
	}
	moment := time.NewTimer(500 * time.Millisecond)
	defer moment.Stop()
wait:
	for _, c := range servers {
		select {
		case <-c.exited:
		case <-moment.C:
			break wait
		}
	}
	for pid := range servers {
		killSession(pid, syscall.SIGKILL)
	}
	killOrphans()
}

// send writes m on the control socket; a failure means Warden has gone,
// which the next receive learns.
func (l *launcher) send(m Msg) {
	b := Frame(m.Encode())
	l.wmu.Lock()
	defer l.wmu.Unlock()
	for len(b) > 0 {
		n, err := syscall.Write(ControlFD, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return
		}
		b = b[n:]
	}
}

// receive reads one message and the files sent with it.
func receive(fd int) (Msg, []int, error) {
	var head [4]byte
	oob := make([]byte, syscall.CmsgSpace(3*4))
	n, oobn, err := recvmsg(fd, head[:], oob)
	if err != nil {
		return Msg{}, nil, err
	}
	var files []int
	if oobn > 0 {
		if cmsgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, c := range cmsgs {
				if fds, err := syscall.ParseUnixRights(&c); err == nil {
					files = append(files, fds...)
				}
			}
		}
	}
	if err := readFull(fd, head[n:]); err != nil {
		return Msg{}, files, err
	}
	size, err := FrameSize(head)
	if err != nil {
		return Msg{}, files, err
	}
	body := make([]byte, size)
	if err := readFull(fd, body); err != nil {
		return Msg{}, files, err
	}
	m, err := DecodeMsg(body)
	return m, files, err
}

func recvmsg(fd int, p, oob []byte) (n, oobn int, err error) {
	for {
		n, oobn, _, _, err = syscall.Recvmsg(fd, p, oob, syscall.MSG_CMSG_CLOEXEC)
		if err != syscall.EINTR {
			break
		}
	}
	if err == nil && n == 0 {
		err = errors.New("control socket closed")
	}
	return n, oobn, err
}

func readFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, _, err := recvmsg(fd, b, nil)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// MaxMsg bounds a message on the control socket: a server's command line
// and environment, which exec limits to far less.
const MaxMsg = 16 << 20

// Frame is b with its length before it, as messages travel on the control
// socket (a stream).
func Frame(b []byte) []byte {
	n := len(b)
	return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, b...)
}

// FrameSize is the length of the message whose frame begins with head.
func FrameSize(head [4]byte) (int, error) {
	n := int(head[0])<<24 | int(head[1])<<16 | int(head[2])<<8 | int(head[3])
	if n > MaxMsg {
		return 0, errors.New("message too large")
	}
	return n, nil
}
