// Package daemon wires Warden together and runs it: config, state dir and
// store, the gateway with its upstreams, the MCP surfaces, the operator API,
// metrics, and hot reload on file change or SIGHUP.
package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/events"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/state"
	"github.com/wardenmcp/warden/metrics"
	"github.com/wardenmcp/warden/oauth"
	"github.com/wardenmcp/warden/sandbox"
	"github.com/wardenmcp/warden/sessions"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/surface"
	"github.com/wardenmcp/warden/ui"
	"github.com/wardenmcp/warden/upstream"
	"github.com/wardenmcp/warden/writes"
)

// Options configure a daemon run.
type Options struct {
	ConfigPath string // "" means config.DefaultPath()
	StateDir   string // flag value; "" to resolve the usual way
	Listen     string // overrides the config's listen when set (serve --listen)
	Version    string
	// Self is a binary that imports package sandbox (warden itself),
	// to start stdio servers confined; "" starts them directly.
	Self      string
	Isolation sandbox.Mode // sandbox.Namespaces normally; sandbox.Off for diagnosis
	Logger    *slog.Logger // nil: text to stderr
	Listener  net.Listener // optional pre-bound listener (tests); else the config's listen
	Ready     func(*Daemon)
	// SessionIdle closes client sessions idle this long; 0 means
	// surface.DefaultSessionIdle (tests shorten it).
	SessionIdle time.Duration
	Limits      Limits // on client connections and sessions
	// NoFastPath turns off both tools/call fast paths (surface/fast.go
	// downstream, upstream/fastcall.go upstream): every call goes through
	// the SDK's server and client. WARDEN_FASTPATH=off; for diagnosis.
	NoFastPath bool
	// Instance names this instance among those sharing a store (serve
	// --instance); "" is the host's name and the listen port.
	Instance string
	// AllowAnonymous lets a config that knows no callers serve on an
	// address beyond loopback (serve --allow-anonymous; see anonymous).
	AllowAnonymous bool
}

// Daemon is a running Warden.
type Daemon struct {
	opts     Options
	log      *slog.Logger
	Addr     string // the listener's address
	StateDir string
	Token    string

	store     store.Store
	approvals *approval.Registry
	ledger    *writes.Ledger
	activity  *activity.Log
	sessions  *sessions.Store
	auth      *oauth.Manager
	events    *events.Broker
	gw        *gateway.Gateway
	surfaces  *surface.Surfaces
	launcher  *sandbox.Launcher
	logs      *serverLogs

	mu          sync.Mutex
	cfg         *config.Config // as running: Servers includes entries kept from before (see keepBroken)
	reloadError string
}

// Run starts Warden and serves until ctx is done. A bad config returns its
// *config.Error before anything starts.
func Run(ctx context.Context, opts Options) error {
	cfg, err := config.LoadAll(opts.ConfigPath)
	if err != nil {
		return err
	}
	if opts.Listen != "" {
		cfg.Listen = opts.Listen
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	addr := cfg.Listen
	if opts.Listener != nil {
		addr = opts.Listener.Addr().String()
	}
	anon, err := anonymous(cfg, addr, opts.AllowAnonymous)
	switch {
	case err != nil:
		return err
	case anon && loopback(addr):
		log.Info(`no "auth" or "clients" in the config: anyone on this machine who reaches the port may call every approved tool`, "listen", addr)
	case anon:
		log.Warn(`no "auth" or "clients" in the config and --allow-anonymous: anyone who reaches the port may call every approved tool`, "listen", addr)
	}
	d := &Daemon{opts: opts, log: log, cfg: cfg, events: events.New()}
	d.StateDir = state.Dir(opts.StateDir, cfg.StateDir)
	cfg.RefuseCrossWrites(d.StateDir)
	d.logs = &serverLogs{dir: filepath.Join(d.StateDir, "logs")}
	if d.Token, err = state.EnsureToken(d.StateDir); err != nil {
		return err
	}
	unlock, err := state.Lock(d.StateDir)
	if err != nil {
		return err
	}
	defer unlock()
	listening := false
	defer func() {
		if listening {
			log.Info("warden stopped")
		}
	}()
	if err := d.openStore(ctx, cfg); err != nil {
		return err
	}
	defer d.closeStore()
	defer d.logs.close()
	if d.launcher, err = d.newLauncher(cfg); err != nil {
		return err
	}
	defer d.launcher.Close()

	lim := opts.Limits.withDefaults(raiseNoFile(log))
	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Listen); err != nil {
			if opts.Listen != "" {
				return fmt.Errorf("listen on %s (--listen): %w; stop the other program or give another address", cfg.Listen, err)
			}
			return fmt.Errorf("listen on %s (config %s, field listen): %w; stop the other program or set another \"listen\"", cfg.Listen, cfg.Path, err)
		}
	}
	d.Addr = ln.Addr().String()
	// The CLI's way in: it finds the socket from the state dir, which this
	// daemon holds (state.Lock), and so reaches no other process.
	sock, err := state.Listen(d.StateDir)
	if err != nil {
		ln.Close()
		return err
	}
	defer os.Remove(filepath.Join(d.StateDir, state.SocketFile))
	conns := newConnLimit(ln, lim.MaxConns, log)
	d.auth.SetCallbackURL("http://" + d.Addr + "/oauth/callback")

	name := d.storeOptions(cfg).Instance
	stopBeat, err := d.heartbeat(ctx, name)
	if err != nil {
		ln.Close()
		sock.Close()
		return err
	}
	defer stopBeat()
	label := "" // one instance: series as before
	if d.store.Shared() {
		label = name
	}
	m := metrics.New(label)
	d.gw = gateway.New(gateway.Deps{
		Approvals: d.approvals, Writes: d.ledger, Activity: d.activity, Events: d.events, Metrics: m, Logger: log,
		Upstream: upstream.Options{Launcher: d.launcher, Version: opts.Version, Stderr: d.logs.writer, NoFastPath: opts.NoFastPath, Notices: opts.Limits.Notices,
			Sessions: d.sessions, Auth: d.auth, SessionEvent: func(server, kind string) {
				m.SessionEvent(server, kind)
				d.events.Publish(events.Event{Type: "session", Server: server, Data: map[string]string{"event": kind}})
			}},
	})
	d.pruneSessions(cfg)
	d.pruneAuth(cfg)
	surfaces := surface.New(d.gw, log, opts.Version, opts.SessionIdle, lim.MaxSessions)
	defer surfaces.Close()
	d.surfaces = surfaces
	surfaces.SetStdio(viaSocket)
	surfaces.ShareSessions(d.store)
	tasksCtx, stopTasks := context.WithCancel(ctx)
	defer stopTasks()
	ts, err := d.openTasks(tasksCtx, cfg.Tasks)
	if err != nil {
		ln.Close()
		sock.Close()
		return err
	}
	surfaces.SetTasks(ts)
	if opts.NoFastPath {
		surfaces.DisableFastPath()
		log.Warn("the tools/call fast paths are off (WARDEN_FASTPATH=off): every call goes through the SDK, slower")
	}
	d.setSurfaces(cfg)
	if cfg.Missing {
		log.Info("no config file yet; starting with no servers. Add one with: warden servers add NAME -- COMMAND ARGS... (or --url URL)", "config", cfg.Path)
	}
	d.reportConfig(cfg)
	// The servers start first, before the HTTP routes are built: with one
	// processor for Go (cmd/warden/serve.go, on two CPUs), their
	// goroutines would otherwise wait until this one blocks.
	d.gw.Reconcile(cfg.Servers)
	defer d.gw.Close()
	runtime.Gosched()
	releaseCtx, stopRelease := context.WithCancel(ctx)
	released := make(chan struct{})
	go func() { defer close(released); releaseWhenQuiet(releaseCtx, releaseEvery, debug.FreeOSMemory) }()
	defer func() { stopRelease(); <-released }()

	// No ReadTimeout or WriteTimeout: they would end event streams and long
	// calls; the handler bounds the body and each write instead.
	srv := &http.Server{Handler: conns.handler(lim, d.routes(surfaces, m)),
		ReadHeaderTimeout: lim.ReadHeaderTimeout, IdleTimeout: lim.IdleTimeout, ConnState: conns.connState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return withCallerCheck(conns.connContext(ctx, c), c)
		}}

	reloadCtx, stopReload := context.WithCancel(ctx)
	defer stopReload()
	// The config file is watched before Warden says it listens: an edit
	// made once it is up is never missed.
	watching := make(chan struct{})
	go d.watch(reloadCtx, watching)
	<-watching

	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(conns) }()
	go func() { errc <- srv.Serve(sock) }()
	listening = true
	log.Info("warden listening", "addr", d.Addr, "socket", filepath.Join(d.StateDir, state.SocketFile), "config", cfg.Path, "state", d.StateDir, "servers", len(cfg.Servers), "max_conns", lim.MaxConns)
	if opts.Ready != nil {
		opts.Ready(d)
	}
	select {
	case <-ctx.Done():
		log.Info("stopping warden: closing client connections, then the upstream servers")
	case err := <-errc:
		log.Error("stopping warden: serving failed", "err", err)
		return err
	}
	// Clients' open event streams would hold a graceful shutdown: give
	// requests in flight a moment, then close what is left.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if srv.Shutdown(shutdownCtx) != nil {
		_ = srv.Close()
	}
	return nil
}

func (d *Daemon) openStore(ctx context.Context, cfg *config.Config) error {
	o := d.storeOptions(cfg)
	st, err := store.Open(ctx, o)
	if err != nil {
		return storeError(cfg, err)
	}
	d.store = st
	if d.approvals, err = approval.Open(ctx, st); err == nil {
		if d.ledger, err = writes.Open(st); err == nil {
			if d.activity, err = activity.Open(st, cfg.Activity.MaxEntries, cfg.Activity.MaxAge); err == nil {
				if d.sessions, err = sessions.Open(ctx, st, sessionOwner(d.StateDir)); err == nil {
					d.auth, err = oauth.Open(ctx, st, oauth.Options{Logger: d.log, Event: func(server string, data map[string]string) {
						d.events.Publish(events.Event{Type: "auth", Server: server, Data: data})
					}})
				}
			}
		}
	}
	if err != nil {
		d.closeStore()
		return storeError(cfg, fmt.Errorf("store %s: %w", o.Path, err))
	}
	return nil
}

func (d *Daemon) closeStore() {
	if d.activity != nil {
		_ = d.activity.Close()
	}
	if d.ledger != nil {
		d.ledger.Close()
	}
	_ = d.store.Close()
}

// sessionOwner names this instance across its restarts, for its upstream
// sessions: its host and state dir, which no two running instances share.
func sessionOwner(stateDir string) string {
	host, _ := os.Hostname()
	return strings.ReplaceAll(host+":"+stateDir, "/", "_")
}

func (d *Daemon) routes(s *surface.Surfaces, m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", d.refuseServers(s))
	mux.Handle("/mcp/", d.refuseServers(s))
	mux.HandleFunc("GET "+callers.MetadataPath, s.ServeMetadata)
	// The review page reads and decides through the API, in-process.
	review := &ui.UI{Store: d.store, Callers: d.surfaces.Callers}
	review.API = api.Handler(api.Deps{
		Version: d.opts.Version, Token: d.Token, Started: time.Now(), Gateway: d.gw,
		Approvals: d.approvals, Writes: d.ledger, Activity: d.activity, Events: d.events,
		Config: d.configInfo, Sessions: func() any { return d.sessions.List() }, Caller: d.checkCaller, Socket: viaSocket, Auth: d.auth,
		Logs:         func(server string) (api.LogFile, error) { return d.logs.file(server) },
		SearchTokens: surface.SearchViewTokens(),
		UILogin:      review.NewCode,
		Instances:    d.instanceList, SharedStore: d.store.Shared(), Callers: d.surfaces.Callers,
		Decisions: func(ctx context.Context, server string, limit int) ([]decisions.Decision, error) {
			return decisions.List(ctx, d.store, server, limit)
		},
	})
	mux.Handle("/v1/", review.API)
	mux.Handle("/ui/", review)
	mux.HandleFunc("GET /oauth/callback", d.auth.Callback)
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	host, _, _ := net.SplitHostPort(d.Addr)
	public := "" // how clients reach Warden, read at start
	if u, err := url.Parse(d.cfg.PublicURL); err == nil {
		public = u.Hostname()
	}
	return guard([]string{host, public}, mux)
}

func (d *Daemon) configInfo() api.ConfigInfo {
	d.mu.Lock()
	cfg, reloadErr := d.cfg, d.reloadError
	d.mu.Unlock()
	info := api.ConfigInfo{Path: cfg.Path, Listen: d.Addr, ReloadError: reloadErr}
	names := sortedNames(cfg.Servers)
	for name := range cfg.Broken {
		if cfg.Servers[name] == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		s := cfg.Servers[name]
		if s == nil { // a broken entry that never loaded
			info.Servers = append(info.Servers, api.ServerConfig{Name: name, ConfigError: cfg.Broken[name].Error()})
			continue
		}
		var configErr string
		if e := cfg.Broken[name]; e != nil {
			configErr = e.Error() + " (still running the entry it had before)"
		}
		target := s.DisplayURL()
		if s.Transport == config.TransportStdio {
			target = s.Command
		}
		hidden := map[string]bool{}
		for t, o := range s.Tools {
			if o.Hidden {
				hidden[t] = true
			}
		}
		info.Servers = append(info.Servers, api.ServerConfig{Name: name, Transport: s.Transport, Target: target,
			Trusted: s.Trusted, Disabled: s.Disabled, Hidden: hidden, ConfigError: configErr})
	}
	return info
}

// setSurfaces gives the surfaces what cfg says of them: the default view,
// and the known callers.
func (d *Daemon) setSurfaces(cfg *config.Config) {
	d.surfaces.SetToolSearch(surface.ToolSearch{Mode: cfg.ToolSearch, Budget: cfg.ToolSearchBudget, Rerank: cfg.ToolSearchRerank})
	d.surfaces.SetCallers(callers.New(cfg))
}

// watch reloads on config file changes and SIGHUP.
// watching is closed once the file is watched (or cannot be) and SIGHUP
// is caught.
func (d *Daemon) watch(ctx context.Context, watching chan struct{}) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	changed := make(chan struct{}, 1)
	ready := sync.OnceFunc(func() { close(watching) })
	go func() {
		err := config.Watch(ctx, d.cfg.Path, func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}, ready)
		ready() // the watch could not be set up: SIGHUP still reloads
		if err != nil && ctx.Err() == nil {
			d.log.Warn("not watching the config file; reload with SIGHUP", "err", err)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		case <-changed:
		}
		d.Reload(ctx)
	}
}

// Reload reads the config again and applies it. A file that fails as a
// whole is refused: the running config stays and the reason is reported.
// A server entry that cannot be loaded affects only that server: it keeps
// the entry it was running with, if any, and shows the problem.
func (d *Daemon) Reload(ctx context.Context) {
	d.mu.Lock()
	path, running, had := d.cfg.Path, d.cfg.Servers, !d.cfg.Missing && !d.cfg.Empty
	d.mu.Unlock()
	cfg, err := d.load(ctx, path, running, had)
	if ctx.Err() != nil {
		return // stopping
	}
	if err == nil {
		_, err = anonymous(cfg, d.Addr, d.opts.AllowAnonymous) // a file that drops its callers does not open the port
	}
	d.mu.Lock()
	if err != nil {
		d.reloadError = err.Error()
		d.mu.Unlock()
		d.log.Error("config reload refused; keeping the running config", "err", err)
		d.events.Publish(events.Event{Type: "config", Data: map[string]string{"result": "refused", "error": err.Error()}})
		return
	}
	for name := range cfg.Broken {
		if s := running[name]; s != nil {
			cfg.Servers[name] = s
		}
	}
	// After keeping running entries: one kept may lie where a new server
	// writes, and is then not kept.
	cfg.RefuseCrossWrites(d.StateDir)
	d.cfg, d.reloadError = cfg, ""
	d.mu.Unlock()
	d.reportConfig(cfg)
	d.setSurfaces(cfg)
	d.gw.Reconcile(cfg.Servers)
	d.pruneAuth(cfg)
	d.log.Info("config reloaded", "servers", len(cfg.Servers))
	data := map[string]string{"result": "applied"}
	for name, e := range cfg.Broken {
		data["error."+name] = e.Error()
	}
	d.events.Publish(events.Event{Type: "config", Data: data})
}

// settleFor is how long a config file that would stop every running
// server must stay the same before it is applied. Saving over a file
// truncates it, then writes it: read in between, it says less than it will.
const settleFor = time.Second

// load reads the config file for a reload. A file that is gone, or empty
// while a config was loaded (had), is refused: a save in progress reads so.
// One that would stop every running server is read again after settleFor,
// and taken only when it is the same file; one that changed is judged
// afresh.
func (d *Daemon) load(ctx context.Context, path string, running map[string]*config.Server, had bool) (*config.Config, error) {
	cfg, err := config.LoadAll(path)
	for {
		switch {
		case err != nil:
			return nil, err
		case cfg.Missing:
			return nil, fmt.Errorf("config %s: the file is gone; keeping the running config (recreate the file, or remove servers with warden servers remove)", path)
		case cfg.Empty && had:
			return nil, fmt.Errorf(`config %s: the file is empty (read while being saved?); keeping the running config (to remove every server, write {"mcpServers": {}} there, or use warden servers remove)`, path)
		case !stopsEvery(running, cfg):
			return cfg, nil
		}
		d.log.Warn("the config file would stop every server: applying it only if it stays the same for "+settleFor.String(), "servers", len(running))
		d.events.Publish(events.Event{Type: "config", Data: map[string]string{"result": "settling"}})
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(settleFor):
		}
		again, againErr := config.LoadAll(path)
		if againErr == nil && again.Sum == cfg.Sum && !again.Missing {
			return cfg, nil
		}
		cfg, err = again, againErr
	}
}

// stopsEvery reports whether cfg would stop every running server: it names
// none of them (an entry that cannot be loaded keeps its server running).
func stopsEvery(running map[string]*config.Server, cfg *config.Config) bool {
	for name := range running {
		if cfg.Servers[name] != nil || cfg.Broken[name] != nil {
			return false
		}
	}
	return len(running) > 0
}

// reportConfig logs what a loaded config leaves out or ignores.
func (d *Daemon) reportConfig(cfg *config.Config) {
	for _, n := range cfg.Notes {
		d.log.Info("note: " + n)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Broken)) {
		d.log.Error("server entry not loaded; the others are", "server", name, "err", cfg.Broken[name].Error())
	}
	if len(cfg.Clients) > 0 {
		d.log.Info("MCP requests need the bearer token of a client in the config; each sees what its profiles allow", "clients", len(cfg.Clients))
	} else {
		d.log.Info("no clients in the config: anyone who reaches the listener may use every approved tool")
	}
	d.warnInheritAll(cfg)
}

// Gateway is the running gateway (for tests and embedding).
func (d *Daemon) Gateway() *gateway.Gateway { return d.gw }

// Surfaces are the running MCP endpoints (for tests and embedding).
func (d *Daemon) Surfaces() *surface.Surfaces { return d.surfaces }

// pruneAuth forgets the OAuth tokens of servers gone from cfg (see
// oauth.Manager.Prune). A config file that is not there yet names no
// servers, and forgets nothing.
func (d *Daemon) pruneAuth(cfg *config.Config) {
	if cfg.Missing {
		return
	}
	d.auth.Prune(func(name string) bool { return cfg.Servers[name] != nil || cfg.Broken[name] != nil })
}

// pruneSessions drops stored sessions of servers that are gone from the
// config (nothing is known to end them with: they are left to expire) and
// ends those of disabled servers.
func (d *Daemon) pruneSessions(cfg *config.Config) {
	for _, name := range d.sessions.Servers() {
		s, ok := cfg.Servers[name]
		switch {
		case !ok:
			if err := d.sessions.Delete(name); err == nil {
				d.log.Info("upstream session of a server no longer configured: record dropped, session left to expire", "server", name)
			}
		case s.Disabled:
			upstream.EndStoredSession(context.Background(), s, d.sessions, d.log.With("server", name))
		}
	}
}
