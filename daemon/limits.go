package daemon

import (
	"context"
	"fmt"
	"github.com/wardenmcp/warden/upstream"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wardenmcp/warden/surface"
)

// Limits bound what clients can hold of the daemon. Zero values mean the
// defaults below (tests shorten them).
type Limits struct {
	// A request's headers must arrive within ReadHeaderTimeout (this also
	// closes a connection that sends nothing), its body within BodyTimeout.
	ReadHeaderTimeout, BodyTimeout time.Duration
	// Each write to a client must complete within WriteTimeout (a client
	// that stops reading is dropped). Streams and long calls are not
	// bounded: the deadline moves with every write.
	WriteTimeout time.Duration
	// A kept-alive connection with no request is closed after IdleTimeout.
	IdleTimeout time.Duration
	// MaxConns bounds the open client connections; the default follows the
	// file-descriptor limit. See connLimit.
	MaxConns int
	// MaxSessions bounds the MCP client sessions (surface.DefaultMaxSessions).
	MaxSessions int
	// Notices bounds each server's notifications for clients (0:
	// upstream.NoticeRate a second after a burst of upstream.NoticeBurst).
	Notices upstream.NoticeLimit
}

const (
	defaultReadHeaderTimeout = 10 * time.Second
	defaultBodyTimeout       = 30 * time.Second
	defaultWriteTimeout      = 30 * time.Second
	defaultIdleTimeout       = 30 * time.Second
	maxDefaultConns          = 8192
)

// withDefaults fills in the defaults; nofile is the file-descriptor limit.
func (l Limits) withDefaults(nofile uint64) Limits {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, defaultReadHeaderTimeout)
	def(&l.BodyTimeout, defaultBodyTimeout)
	def(&l.WriteTimeout, defaultWriteTimeout)
	def(&l.IdleTimeout, defaultIdleTimeout)
	if l.MaxConns <= 0 {
		// Half the descriptors, the rest for upstreams, stdio pipes,
		// the store and logs.
		l.MaxConns = int(min(maxDefaultConns, max(nofile/2, 32)))
	}
	return l
}

// raiseNoFile raises the soft limit on open files to the hard limit and
// returns it. (Go's runtime does so too at start, and gives child processes
// the original soft limit back; this changes nothing when it already did.)
func raiseNoFile(log *slog.Logger) uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		log.Warn("cannot read the open-file limit", "err", err)
		return 1024
	}
	if r.Cur < r.Max {
		want := r
		want.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			log.Warn("cannot raise the open-file limit to the hard limit", "soft", r.Cur, "hard", r.Max, "err", err)
			return r.Cur
		}
	}
	return r.Max
}

// connLimit is the listener with at most max client connections open. When
// one more arrives, the connection that has been idle longest (no request
// in a handler: kept alive between requests, or sending nothing yet) is
// closed for it, and if every one is in a request the new one is closed.
// Since at most maxMCP of them can be in an /mcp request (limitHandler),
// there is always room for /healthz and the operator API, however many
// clients hold connections to /mcp.
type connLimit struct {
	net.Listener
	max, maxMCP int
	log         *slog.Logger

	mu    sync.Mutex
	conns map[net.Conn]*connInfo

	mcpActive atomic.Int64 // requests in an /mcp handler
	shedAt    atomic.Int64 // when shedding was last logged (Unix ns)
}

// connInfo is one client connection.
type connInfo struct {
	busy atomic.Int32 // requests in a handler
	at   atomic.Int64 // accepted, or a request last left its handler (Unix ns)
}

func newConnLimit(ln net.Listener, n int, log *slog.Logger) *connLimit {
	// Keep a sixteenth (at least 4) for requests other than /mcp.
	reserve := max(n/16, 4)
	return &connLimit{Listener: ln, max: n, maxMCP: max(n-reserve, 1), log: log, conns: map[net.Conn]*connInfo{}}
}

func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		info := &connInfo{}
		info.at.Store(time.Now().UnixNano())
		l.mu.Lock()
		var victim net.Conn
		full := len(l.conns) >= l.max
		if full {
			victim = l.idlestLocked()
			delete(l.conns, victim)
		}
		if !full || victim != nil {
			l.conns[c] = info
		}
		l.mu.Unlock()
		if full {
			l.shed(victim != nil)
		}
		if victim != nil {
			victim.Close()
		} else if full {
			c.Close()
			continue
		}
		return c, nil
	}
}

// idlestLocked returns the connection idle longest, or nil when each is in
// a request.
func (l *connLimit) idlestLocked() net.Conn {
	var victim net.Conn
	oldest := int64(0)
	for c, info := range l.conns {
		if info.busy.Load() != 0 {
			continue
		}
		if at := info.at.Load(); victim == nil || at < oldest {
			victim, oldest = c, at
		}
	}
	return victim
}

func (l *connLimit) shed(evicted bool) {
	if now, last := time.Now().UnixNano(), l.shedAt.Load(); now-last > int64(time.Minute) && l.shedAt.CompareAndSwap(last, now) {
		what := "closed the connection idle longest for a new one"
		if !evicted {
			what = "every connection is in a request: refused a new one"
		}
		l.log.Warn("at the client connection limit (logged once a minute): "+what, "limit", l.max)
	}
}

// connState forgets connections the server is done with (http.Server.ConnState).
func (l *connLimit) connState(c net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
	}
}

type connKey struct{}

// connContext hands the connection's record to its requests (http.Server.ConnContext).
func (l *connLimit) connContext(ctx context.Context, c net.Conn) context.Context {
	l.mu.Lock()
	info := l.conns[c]
	l.mu.Unlock()
	if info == nil {
		return ctx
	}
	return context.WithValue(ctx, connKey{}, info)
}

// handler applies the per-request limits: the connection counts as busy
// while in a request; /mcp requests beyond maxMCP are answered 503 at once;
// the body must arrive within body; each write must complete within write.
func (l *connLimit) handler(lim Limits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, _ := r.Context().Value(connKey{}).(*connInfo); info != nil {
			info.busy.Add(1)
			defer func() { info.at.Store(time.Now().UnixNano()); info.busy.Add(-1) }()
		}
		if surface.IsMCP(r) {
			defer l.mcpActive.Add(-1)
			if n := l.mcpActive.Add(1); n > int64(l.maxMCP) {
				w.Header().Set("Connection", "close")
				w.Header().Set("Retry-After", "1")
				surface.RefuseUnread(w, r, http.StatusServiceUnavailable, fmt.Sprintf("Warden is serving %d MCP requests, its limit; retry in a moment", l.maxMCP))
				return
			}
		}
		rc := http.NewResponseController(w)
		if r.ContentLength != 0 { // a body comes
			_ = rc.SetReadDeadline(time.Now().Add(lim.BodyTimeout))
			r.Body = &bodyDeadline{ReadCloser: r.Body, rc: rc}
		}
		dw := &writeDeadline{ResponseWriter: w, rc: rc, d: lim.WriteTimeout}
		dw.extend(time.Now())
		defer func() { dw.extend(time.Now()) }() // for what the server writes after the handler
		next.ServeHTTP(dw, r)
	})
}

// bodyDeadline lifts the body's read deadline once the body is read: the
// server then watches the connection for the client going away, which must
// not end a long call or a stream.
type bodyDeadline struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *bodyDeadline) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// writeDeadline moves the write deadline ahead of each write, so that
// only a write that blocks (a client not reading) runs into it.
type writeDeadline struct {
	http.ResponseWriter
	rc   *http.ResponseController
	d    time.Duration
	last time.Time // when the deadline was last moved
}

// extend moves the deadline to now+d; at most every d/8, since each move
// costs a little and the deadline then is at least 7/8 d away.
func (w *writeDeadline) extend(now time.Time) {
	if now.Sub(w.last) >= w.d/8 {
		w.last = now
		_ = w.rc.SetWriteDeadline(now.Add(w.d))
	}
}

func (w *writeDeadline) Write(p []byte) (int, error) {
	w.extend(time.Now())
	return w.ResponseWriter.Write(p)
}

func (w *writeDeadline) Flush() {
	w.extend(time.Now())
	_ = w.rc.Flush()
}

func (w *writeDeadline) WriteHeader(code int) {
	w.extend(time.Now())
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *writeDeadline) Unwrap() http.ResponseWriter { return w.ResponseWriter }
