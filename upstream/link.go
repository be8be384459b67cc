package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
)

// link is a connection as its calls see it: the live session and the
// status, which the supervisor (Conn.run) sets, and the wait for a session
// that every call makes, bounded in time and concurrency.
type link struct {
	name   string
	cfg    *atomic.Pointer[config.Server] // the connection's: its callTimeout
	peer   Peer                           // told every status change; may be nil
	login  login
	demand *demand
	sem    chan struct{} // calls in flight

	mu      sync.Mutex
	session *mcp.ClientSession
	changed chan struct{} // closed and replaced on every status change
	status  Status
}

func newLink(name string, cfg *atomic.Pointer[config.Server], opts Options, l login, d *demand) *link {
	k := &link{name: name, cfg: cfg, peer: opts.Peer, login: l, demand: d,
		sem:     make(chan struct{}, opts.MaxConcurrent),
		changed: make(chan struct{}),
		status:  Status{State: StateConnecting, Since: time.Now()},
	}
	if cfg.Load().OnDemand {
		k.status.State = StateIdle
	}
	return k
}

// live is the live session, nil between sessions.
func (k *link) live() *mcp.ClientSession {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.session
}

// snapshot is the connection's status; a live session whose token was
// lost or revoked needs a login.
func (k *link) snapshot() Status {
	k.mu.Lock()
	st := k.status
	k.mu.Unlock()
	if need, _ := k.login.needed(); need && st.State != StateStopped {
		st.State = StateNeedsLogin
	}
	return st
}

// set moves the connection to state st, failed with err if not nil, and
// tells the Peer.
func (k *link) set(st State, err error) {
	k.mu.Lock()
	k.status.State = st
	k.status.Since = time.Now()
	if st != StateConnecting || k.status.Failures == 0 {
		// A retry keeps the last failure until it ends: a look at the
		// status between attempts still says why the server is not up.
		k.status.Error, k.status.Stderr = "", nil
	}
	if st != StateBackoff {
		k.status.RetryAt = time.Time{}
	}
	if err != nil {
		k.status.Error = err.Error()
	}
	if ee := (*exitError)(nil); errors.As(err, &ee) {
		k.status.Stderr = ee.Stderr
	}
	s := k.status
	close(k.changed)
	k.changed = make(chan struct{})
	k.mu.Unlock()
	if k.peer != nil {
		k.peer.StateChanged(k.name, s)
	}
}

// backoff records the failures in a row, and waits wait before the next
// attempt.
func (k *link) backoff(failures int, wait time.Duration, err error) {
	k.mu.Lock()
	k.status.Failures, k.status.RetryAt = failures, time.Now().Add(wait)
	k.mu.Unlock()
	k.set(StateBackoff, err)
}

// serving makes cs the live session: the connection is ready.
func (k *link) serving(cs *mcp.ClientSession) {
	k.mu.Lock()
	k.status.Failures = 0
	k.session = cs
	k.mu.Unlock()
	k.set(StateReady, nil)
}

// ended drops the live session; one lost, not stopped for being idle,
// counts as a reconnect.
func (k *link) ended(lost bool) {
	k.mu.Lock()
	k.session = nil
	if lost {
		k.status.Reconnects++
	}
	k.mu.Unlock()
}

// do runs fn with the live session, waiting for the connection if it is
// being established, bounded by callTimeout and the server's concurrency
// limit; its error is redacted.
func (k *link) do(ctx context.Context, fn func(context.Context, *mcp.ClientSession) error) error {
	ctx, cancel := context.WithTimeoutCause(ctx, k.cfg.Load().CallTimeout, ErrTimeout)
	defer cancel()
	defer k.demand.use()()
	err := func() error {
		select {
		case k.sem <- struct{}{}:
		case <-ctx.Done():
			return k.ctxErr(ctx)
		}
		defer func() { <-k.sem }()
		cs, err := k.wait(ctx)
		if err != nil {
			return err
		}
		if err := fn(ctx, cs); err != nil {
			if ctx.Err() != nil && !Answered(err) {
				return k.ctxErr(ctx)
			}
			return err
		}
		return nil
	}()
	return redact(k.cfg.Load(), err)
}

// ready waits, as a call would, until the server is connected and listed.
func (k *link) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeoutCause(ctx, k.cfg.Load().CallTimeout, ErrTimeout)
	defer cancel()
	defer k.demand.use()()
	_, err := k.wait(ctx)
	return err
}

// ErrTimeout is the cause of a call that ran past callTimeout.
var ErrTimeout = errors.New("call timed out")

func (k *link) ctxErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return fmt.Errorf("%w after %s (callTimeout of server %q)", ErrTimeout, k.cfg.Load().CallTimeout, k.name)
	}
	return ctx.Err()
}

// wait returns the ready session, waiting while a connection attempt is
// under way (and waking an idle on-demand server); a server in backoff
// fails at once with the last error.
func (k *link) wait(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		k.mu.Lock()
		cs, changed, st := k.session, k.changed, k.status
		k.mu.Unlock()
		if need, _ := k.login.needed(); need {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, k.login.required())
		}
		if cs != nil {
			return cs, nil
		}
		if st.State == StateIdle {
			k.demand.wake()
		}
		if st.State == StateBackoff || st.State == StateStopped {
			return nil, fmt.Errorf("%w: server %q is %s: %s%s", ErrUnavailable, k.name, st.State, st.Error, stderrNote(k.name, st.Stderr))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: server %q is still %s: %w", ErrUnavailable, k.name, st.State, k.ctxErr(ctx))
		}
	}
}

// stderrNote quotes a failed stdio server's last stderr lines, one per
// line, and says where the rest is.
func stderrNote(server string, lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("; the last lines of its stderr:\n  %s\n(its whole log: warden logs %s)", strings.Join(lines, "\n  "), server)
}
