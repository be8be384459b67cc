package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/sandbox"
)

// newLauncher sets up how stdio servers are confined, and says so: a
// fallback to weaker isolation is a warning the person must see.
func (d *Daemon) newLauncher(cfg *config.Config) (*sandbox.Launcher, error) {
	l, err := sandbox.NewLauncher(d.opts.Self, d.StateDir, cfg.Path, d.opts.Isolation)
	if l == nil {
		return nil, err
	}
	if err != nil {
		d.log.Warn(err.Error())
	}
	switch l.Mode {
	case sandbox.Off:
		d.log.Warn("isolation is off (WARDEN_ISOLATION=off): stdio servers get Warden's environment, can read its state dir and config, and can use the operator API")
	case sandbox.Namespaces, sandbox.Reaper:
		if err := sandbox.ProtectSelf(); err != nil {
			d.log.Warn("could not make Warden's memory unreadable to other processes", "err", err)
		}
		d.log.Info("stdio servers confined", "mode", l.Mode.String())
	}
	return l, nil
}

// callerCheck is one connection's verdicts of checkCaller and
// refuseServers: who holds a connection's other end does not change, and
// finding out reads /proc.
type callerCheck struct {
	conn   net.Conn
	socket bool // on the state dir's socket
	once   sync.Once
	err    error

	clientOnce sync.Once
	clientErr  error
}

type callerCheckKey struct{}

// withCallerCheck gives each connection's requests a place for its verdict
// (http.Server.ConnContext).
func withCallerCheck(ctx context.Context, c net.Conn) context.Context {
	_, socket := c.(*net.UnixConn)
	return context.WithValue(ctx, callerCheckKey{}, &callerCheck{conn: c, socket: socket})
}

// viaSocket reports whether r came on the state dir's socket.
func viaSocket(r *http.Request) bool {
	c, ok := r.Context().Value(callerCheckKey{}).(*callerCheck)
	return ok && c.socket
}

// checkCaller refuses an operator API request from a process Warden
// started, or from one it cannot identify. On the state dir's socket it
// asks the kernel's record of the connecting process; on TCP, the process
// holding the other end must be found and be neither one Warden started
// nor a server of any Warden. No server may approve itself, whatever token
// it found; other programs of the same user are outside this boundary
// (README, "Isolation").
func (d *Daemon) checkCaller(r *http.Request) error {
	c, ok := r.Context().Value(callerCheckKey{}).(*callerCheck)
	if !ok {
		return errors.New("the operator API could not tell who is calling")
	}
	if !d.launcher.Mode.Confines() {
		return nil
	}
	c.once.Do(func() {
		switch conn := c.conn.(type) {
		case *net.UnixConn:
			c.err = sandbox.UnixCaller(conn)
		case *net.TCPConn:
			c.err = sandbox.TCPCaller(conn.LocalAddr().(*net.TCPAddr), conn.RemoteAddr().(*net.TCPAddr))
		default:
			c.err = errors.New("the operator API answers TCP and its socket only")
		}
	})
	return c.err
}

// refuseServers answers 403 to an MCP request from a process Warden
// started (see sandbox.ClientCaller). The state dir's socket (warden stdio)
// is out of every server's sight.
func (d *Daemon) refuseServers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := r.Context().Value(callerCheckKey{}).(*callerCheck)
		if !ok {
			http.Error(w, "Warden could not tell who is calling", http.StatusForbidden)
			return
		}
		if !c.socket && d.launcher.Mode.Confines() {
			c.clientOnce.Do(func() {
				if conn, ok := c.conn.(*net.TCPConn); ok {
					c.clientErr = sandbox.ClientCaller(conn.LocalAddr().(*net.TCPAddr), conn.RemoteAddr().(*net.TCPAddr))
				} else {
					c.clientErr = errors.New("Warden's MCP endpoints answer TCP and the state dir's socket only")
				}
			})
			if c.clientErr != nil {
				http.Error(w, c.clientErr.Error(), http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// warnInheritAll names the servers that get Warden's whole environment:
// every ${env:} secret of every other server is in it.
func (d *Daemon) warnInheritAll(cfg *config.Config) {
	for _, name := range sortedNames(cfg.Servers) {
		if s := cfg.Servers[name]; s.InheritAllEnv && !s.Disabled {
			d.log.Warn(`server gets Warden's whole environment ("inheritEnv": true), other servers' secrets included; list the names it needs instead`, "server", name)
		}
	}
}
