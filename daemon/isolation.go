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

// callerCheck is one connection's verdict of refuseSpawned: who holds a
// connection's other end does not change, and finding out reads /proc.
type callerCheck struct {
	once sync.Once
	err  error
}

type callerCheckKey struct{}

// withCallerCheck gives each connection's requests a place for its verdict
// (http.Server.ConnContext).
func withCallerCheck(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, callerCheckKey{}, &callerCheck{})
}

// refuseSpawned refuses operator API requests from any process Warden
// started (a stdio server or its children), even with the token: no server
// may approve itself. Other programs of the same user are outside this
// boundary (README, "Isolation").
func (d *Daemon) refuseSpawned(r *http.Request) error {
	if !d.launcher.Mode.Confines() {
		return nil
	}
	c, ok := r.Context().Value(callerCheckKey{}).(*callerCheck)
	if !ok {
		return errors.New("the operator API could not tell who is calling")
	}
	c.once.Do(func() { c.err = spawnedCaller(r) })
	return c.err
}

func spawnedCaller(r *http.Request) error {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	remote, err := net.ResolveTCPAddr("tcp", r.RemoteAddr)
	if local == nil || err != nil {
		return errors.New("the operator API answers TCP clients only")
	}
	spawned, err := sandbox.FromDescendant(local, remote)
	switch {
	case err != nil:
		return err
	case spawned:
		return errors.New("the operator API refuses processes Warden started (MCP servers and their children); run the warden CLI from your own shell")
	}
	return nil
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
