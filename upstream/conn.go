// Package upstream keeps one supervised MCP client connection per configured
// server: it starts the transport (stdio, streamable HTTP or legacy SSE),
// initializes, caches the server's tool, prompt and resource lists, refreshes
// them on list_changed, reconnects with backoff when the connection drops, and
// bounds every call in time and concurrency. Server-to-client traffic is handed
// to a Peer, which routes it to the right downstream client.
package upstream

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/sandbox"
)

// sessionProtocol is the newest revision with sessions.
const sessionProtocol = "2025-11-25"

// State is a connection's lifecycle state.
type State string

const (
	StateConnecting State = "connecting"
	StateReady      State = "ready"
	StateBackoff    State = "backoff"
	StateStopped    State = "stopped"
	// StateIdle: an on-demand server not running; the next call starts it.
	StateIdle State = "idle"
)

// Status is a snapshot of a connection for operators.
type Status struct {
	State      State     `json:"state"`
	Error      string    `json:"error,omitempty"`
	Since      time.Time `json:"since"`
	Reconnects int       `json:"reconnects"` // sessions lost and replaced
	Failures   int       `json:"failures"`   // connection attempts failed in a row
	// RetryAt is, in backoff, when the next attempt starts.
	RetryAt time.Time `json:"retry_at,omitzero"`
	// Stderr is, after a failed start of a stdio server, the last lines it
	// wrote to its stderr (secrets masked; its whole log: warden logs NAME).
	Stderr []string `json:"stderr,omitempty"`
}

// Inventory is what a server offers, taken in one listing pass. Seq orders
// passes: it is taken before the listing starts.
type Inventory struct {
	Seq       uint64
	Init      *mcp.InitializeResult
	Tools     []*mcp.Tool
	Prompts   []*mcp.Prompt
	Resources []*mcp.Resource
	Templates []*mcp.ResourceTemplate

	byName map[string]*mcp.Tool
}

// Tool finds a tool by name.
func (inv *Inventory) Tool(name string) *mcp.Tool {
	if inv.byName != nil {
		return inv.byName[name]
	}
	for _, t := range inv.Tools { // an inventory not built by a listing pass
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Peer receives what an upstream sends on its own: new inventories, state
// changes, server-to-client requests and notifications.
type Peer interface {
	Inventory(server string, inv *Inventory)
	StateChanged(server string, st Status)
	// Ask has the client of server's call answer q; key is server's name
	// for it in an input-required result, "" for a 2025 request.
	Ask(ctx context.Context, server, key string, q mcp.InputRequest) (mcp.InputResponse, error)
	Log(ctx context.Context, server string, p *mcp.LoggingMessageParams) // ctx names the call, if it came with one
	Progress(server string, p *mcp.ProgressNotificationParams)
	ResourceUpdated(server string, p *mcp.ResourceUpdatedNotificationParams)
	// Exposed reports whether clients may hear from server; one that may
	// not is asked for no log messages and no resource updates (see Expose).
	Exposed(server string) bool
}

// Options are shared by all connections.
type Options struct {
	Peer          Peer
	Logger        *slog.Logger
	Launcher      *sandbox.Launcher             // starts stdio servers; nil: sandbox.Direct
	Stderr        func(server string) io.Writer // where a stdio server's stderr goes
	MaxConcurrent int                           // calls in flight per server; default 32
	Version       string                        // Warden's version, sent as client info
	Sessions      SessionStore                  // persisted HTTP sessions; nil keeps none
	SessionEvent  func(server, kind string)     // resumed, expired, reinitialized, fresh
	Auth          Authorizer                    // OAuth for HTTP servers; nil: none
	Notices       NoticeLimit                   // the rate of notifications for clients; zero: the defaults
	NoticeDropped func(server string)           // a notification above the rate was dropped
	Flood         func(server string, f Flood)  // a flooding episode began or ended
	Answers       *Answers                      // bound over the answers being relayed; nil: a bound of its own
	// NoFastPath sends every tools/call through the SDK client, not the
	// direct HTTP path (callToolHTTP): WARDEN_FASTPATH=off, for diagnosis
	// and the differential test.
	NoFastPath bool
}

// Conn is one supervised upstream connection. Here: its life (connect,
// serve, back off, stop). Each other job is a type of its own, with its own
// lock: the live session, the status and the wait for them every call makes
// (link), the listing passes (lister), the tool calls (fastcall.go,
// rounds.go), the wait for a login (login), and what clients ask of it: the
// resources they follow (followers), the log level (levels), the start and
// idle stop of an on-demand server (demand).
type Conn struct {
	Name string
	cfg  atomic.Pointer[config.Server]
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	http   *sessionTransport // nil unless streamable HTTP
	sse    *headerTransport  // nil unless legacy SSE
	// sessions keeps an HTTP server's session; a removed one's is ended.
	sessions SessionStore
	dial     *dialer
	link     *link
	login    login
	list     *lister
	// answers bounds the answers being relayed.
	answers *Answers
	// callOnSession runs a tools/call: the direct HTTP path (fastcall.go)
	// or the SDK client, chosen at Start (a stateless-era call of a tool
	// that binds headers takes the SDK's, whatever was chosen).
	callOnSession func(context.Context, *mcp.ClientSession, *Call, *mcp.CallToolParams) (*answer.Result, error)
	// direct is a streamable-HTTP upstream's direct path, which a task
	// call passed through takes whatever callOnSession is (see passesTask).
	direct *direct

	subs   *followers
	levels *levels
	demand *demand
}

// Start begins supervising a connection to cfg; it returns at once.
func Start(cfg *config.Server, opts Options) *Conn {
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 32
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Answers == nil {
		opts.Answers = NewAnswers(DefaultAnswersTotal, DefaultAnswerMax, nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Conn{
		Name: cfg.Name, answers: opts.Answers, sessions: opts.Sessions,
		log: opts.Logger.With("server", cfg.Name),
		ctx: ctx, cancel: cancel,
		done:   make(chan struct{}),
		demand: newDemand(),
	}
	c.cfg.Store(cfg)
	// exposed reports whether clients may hear from the server.
	exposed := func() bool { return opts.Peer == nil || opts.Peer.Exposed(cfg.Name) }
	c.login = login{name: cfg.Name, auth: opts.Auth, cfg: &c.cfg}
	c.link = newLink(cfg.Name, &c.cfg, opts, c.login, c.demand)
	c.subs = &followers{ctx: ctx, cfg: &c.cfg, log: c.log, exposed: exposed, do: c.link.do}
	c.list = &lister{name: cfg.Name, ctx: ctx, cfg: &c.cfg, log: c.log, peer: opts.Peer, live: c.link.live}
	c.levels = &levels{exposed: exposed, live: c.link.live}
	// notices throttles notifications for clients: a stdio server's as
	// they are read, others' in the handlers (see noticeAllowed).
	notices := newNoticeGate(cfg.Name, c.log, opts)
	ask := &asker{name: cfg.Name, peer: opts.Peer, level: c.levels.forCalls}
	c.callOnSession = callSDK
	if cfg.Transport == "http" {
		var event func(string)
		if opts.SessionEvent != nil {
			event = func(kind string) { opts.SessionEvent(cfg.Name, kind) }
		}
		c.http = newSessionTransport(cfg, opts.Sessions, c.log, event)
		c.http.authorize(opts.Auth, cfg)
		c.direct = &direct{name: cfg.Name, cfg: &c.cfg, http: c.http, client: clientInfo(opts.Version), peer: opts.Peer,
			notices: notices, ask: ask, refresh: c.list.changed}
		if !opts.NoFastPath {
			c.callOnSession = c.direct.call
		}
	}
	if cfg.Transport == "sse" {
		c.sse = newHeaderTransport(cfg.Headers)
		c.sse.authorize(opts.Auth, cfg)
	}
	c.dial = &dialer{name: cfg.Name, ctx: ctx, cfg: &c.cfg, opts: opts, log: c.log, http: c.http, sse: c.sse,
		notices: notices, ask: ask, changed: c.list.changed, started: c.askFor}
	go c.run()
	return c
}

// Config is the server's current config.
func (c *Conn) Config() *config.Server { return c.cfg.Load() }

// SetConfig applies a config that connects the same way (see
// config.Server.SameConnection): policy fields change without a reconnect.
func (c *Conn) SetConfig(cfg *config.Server) { c.cfg.Store(cfg) }

// Status reports the connection's state.
func (c *Conn) Status() Status { return c.link.snapshot() }

// Stop ends the connection and its process. An HTTP session is kept upstream
// so the next start can resume it.
func (c *Conn) Stop() { c.stop(false) }

// Remove ends the connection for good: an HTTP session is deleted upstream and
// its record dropped.
func (c *Conn) Remove() { c.stop(true) }

func (c *Conn) stop(forget bool) {
	if c.http != nil {
		c.http.endSessionOnClose(forget)
	}
	c.cancel()
	<-c.done
	c.log.Info("upstream stopped")
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
	if c.sse != nil {
		c.sse.CloseIdleConnections()
	}
	if forget && c.http != nil {
		// Not connected when removed: end the stored session anyway.
		EndStoredSession(context.Background(), c.Config(), c.sessions, c.log)
	}
}

// run is the supervisor: connect, serve until the session ends, back off,
// repeat until stopped.
func (c *Conn) run() {
	defer close(c.done)
	failures := 0
	for c.ctx.Err() == nil {
		if c.Config().OnDemand && failures == 0 && !c.awaitWake() {
			break
		}
		c.link.set(StateConnecting, nil)
		cs, err := c.dial.connect()
		err = redact(c.Config(), err)
		if err != nil {
			if c.ctx.Err() != nil {
				break
			}
			if need, changed := c.login.needed(); need {
				// Only a person can fix this: wait for the login.
				c.link.set(StateNeedsLogin, c.login.required())
				c.log.Info("upstream needs a login: run warden auth login " + c.Name)
				select {
				case <-changed:
				case <-c.ctx.Done():
				}
				continue
			}
			failures++
			wait := backoff(failures)
			c.link.backoff(failures, wait, err)
			args := []any{"err", err, "attempt", failures}
			if ee := (*exitError)(nil); errors.As(err, &ee) && len(ee.Stderr) > 0 {
				args = append(args, "stderr", ee.Stderr[len(ee.Stderr)-1])
			}
			c.log.Warn("upstream connect failed", args...)
			select {
			case <-time.After(wait):
			case <-c.ctx.Done():
			}
			continue
		}
		failures = 0
		c.list.pass(cs)
		c.link.serving(cs)
		c.list.resume() // a list_changed during the first listing

		waitErr := make(chan error, 1)
		go func() { waitErr <- cs.Wait() }()
		err = c.serve(cs, waitErr)
		c.link.ended(err != errIdle)
		if err == errIdle {
			c.log.Info("on-demand server idle; stopped", "idleTimeout", c.Config().IdleTimeout)
		} else if c.ctx.Err() == nil {
			c.log.Warn("upstream connection lost; reconnecting", "err", redact(c.Config(), err))
		}
	}
	c.link.set(StateStopped, nil)
}

// serve waits until the session ends. When a login completes meanwhile, the
// lists are taken again: a listing refused for want of a token left them
// stale.
func (c *Conn) serve(cs *mcp.ClientSession, waitErr <-chan error) error {
	var idle <-chan time.Time
	if cfg := c.Config(); cfg.OnDemand {
		t := time.NewTicker(max(cfg.IdleTimeout/4, 10*time.Millisecond))
		defer t.Stop()
		idle = t.C
	}
	for {
		_, authChanged := c.login.needed() // nil without OAuth: never ready
		select {
		case <-idle:
			if c.demand.idle(c.Config().IdleTimeout) {
				_ = cs.Close()
				<-waitErr
				return errIdle
			}
		case err := <-waitErr:
			return err
		case <-c.ctx.Done():
			_ = cs.Close()
			return <-waitErr
		case <-authChanged:
			if need, _ := c.login.needed(); !need {
				c.list.changed()
			}
		}
	}
}

// errIdle ends the session of an on-demand server no call has used for its
// idleTimeout.
var errIdle = errors.New("idle")

// awaitWake holds an on-demand server stopped until a call wants it,
// reporting false when the connection is stopped meanwhile.
func (c *Conn) awaitWake() bool {
	c.link.set(StateIdle, nil)
	return c.demand.await(c.ctx)
}

// Wake starts an on-demand server that is not running (no-op otherwise).
func (c *Conn) Wake() { c.demand.wake() }

// backoff grows exponentially from 200ms to 30s, with jitter.
func backoff(failures int) time.Duration {
	d := 200 * time.Millisecond << min(failures-1, 8)
	d = min(d, 30*time.Second)
	return d/2 + rand.N(d/2+1)
}

// Expose asks the live session for what clients want of the server (their
// log level, their resource subscriptions), now that they may hear from it;
// a new session is asked when it connects.
func (c *Conn) Expose() {
	cs := c.link.live()
	if cs == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(c.ctx, c.Config().CallTimeout)
		c.askFor(ctx, cs)
		cancel()
	}()
}

// askFor asks cs for what clients want of the server: their log level
// now, their resource subscriptions off the caller's path.
func (c *Conn) askFor(ctx context.Context, cs *mcp.ClientSession) {
	c.levels.apply(ctx, cs)
	go c.subs.resubscribe(cs)
}

// Subscribe makes who (a downstream session, or anything comparable that
// stands for one) a follower of uri, subscribing upstream unless the live
// session already is (see followers).
func (c *Conn) Subscribe(ctx context.Context, uri string, who any) error {
	return c.subs.subscribe(ctx, uri, who)
}

// Unsubscribe ends who's following of uri, unsubscribing upstream after the
// last follower.
func (c *Conn) Unsubscribe(ctx context.Context, uri string, who any) error {
	return c.subs.unsubscribe(ctx, uri, who)
}

// Unfollow ends every subscription of who (its session ended).
func (c *Conn) Unfollow(who any) { c.subs.leave(who) }

// Adopt takes over the followers of the connection c replaces (a changed
// config), so that their subscriptions carry on upstream.
func (c *Conn) Adopt(old *Conn) {
	c.subs.adopt(old.subs)
	if cs := c.link.live(); cs != nil { // connected already: its first resubscribe may have missed them
		go c.subs.resubscribe(cs)
	}
}

// Do runs fn with the live session, waiting for the connection if it is
// being established, bounded by callTimeout and the server's concurrency
// limit.
func (c *Conn) Do(ctx context.Context, fn func(context.Context, *mcp.ClientSession) error) error {
	return c.link.do(ctx, fn)
}

// Ready waits, as a call would, until the server is connected and listed.
func (c *Conn) Ready(ctx context.Context) error { return c.link.ready(ctx) }

// Running reports whether the server has a live session.
func (c *Conn) Running() bool { return c.link.live() != nil }

// Refresh lists the server again now.
func (c *Conn) Refresh() { c.list.now() }

// SetLogLevel asks the upstream for log messages at level and above (see
// levels).
func (c *Conn) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	return c.levels.set(ctx, level)
}
