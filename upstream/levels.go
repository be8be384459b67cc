package upstream

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/protocol"
)

// levels is the log level asked of the upstream for all its clients: the
// most verbose any of them asked for. It only ever gets more verbose:
// several clients share it, each with a level of its own that Warden
// filters for, and one asking for less must not silence another.
type levels struct {
	exposed func() bool               // whether clients may hear from the server
	live    func() *mcp.ClientSession // the live session, nil between sessions

	mu    sync.Mutex
	level mcp.LoggingLevel // "": none asked
}

// ask raises the level to level if that is more verbose, reporting whether
// it did.
func (l *levels) ask(level mcp.LoggingLevel) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.level != "" && protocol.LevelRank[level] >= protocol.LevelRank[l.level] {
		return false
	}
	l.level = level
	return true
}

// get is the level asked, "" if none.
func (l *levels) get() mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.level
}

// set asks the upstream for log messages at level and above, now and
// after every reconnect; while clients may not hear from it (see
// Peer.Exposed), only once they may. The upstream's level only ever gets
// more verbose.
func (l *levels) set(ctx context.Context, level mcp.LoggingLevel) error {
	if !l.ask(level) {
		return nil
	}
	cs := l.live()
	if cs == nil || !l.exposed() {
		return nil
	}
	return setLevelOn(ctx, cs, level)
}

// apply sets the level asked on cs, a new session or one clients may now
// hear from.
func (l *levels) apply(ctx context.Context, cs *mcp.ClientSession) {
	if level := l.get(); level != "" && l.exposed() {
		_ = setLevelOn(ctx, cs, level)
	}
}

// forCalls is the log level clients set for the server, while they may
// hear from it: what a stateless-era server is told with each call.
func (l *levels) forCalls() mcp.LoggingLevel {
	if !l.exposed() {
		return ""
	}
	return l.get()
}

// setLevelOn sets the level on a session; a stateless-era server has none,
// and is told the level with each call (see askable).
func setLevelOn(ctx context.Context, cs *mcp.ClientSession, level mcp.LoggingLevel) error {
	if cs.InitializeResult().Capabilities.Logging == nil || stateless(cs) {
		return nil
	}
	return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
}
