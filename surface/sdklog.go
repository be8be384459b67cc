package surface

import (
	"context"
	"log/slog"
	"strings"
)

// sdkLog is the logger the SDK's servers get: it names the endpoint, and
// moves to debug what the SDK logs per session or per message, which names
// no client ("server connecting", "session initialized", "server session
// connected" for every HTTP request without a session, "resource updated
// notification sent"...; Warden logs its own line per client session, see
// track), and its "calling notifications/...: ..." warning for each
// notification a client could not be sent: a client without an open event
// stream is normal, and every list change would warn once per such client.
// Its error for a request of a method the 2026-07-28 revision removed is
// the client's probe of the era (initialize, ping), answered as the
// protocol says: debug too.
func sdkLog(log *slog.Logger, endpoint string) *slog.Logger {
	return slog.New(quietHandler{log.Handler()}).With("endpoint", endpoint)
}

type quietHandler struct{ slog.Handler }

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelInfo || r.Level == slog.LevelWarn && strings.HasPrefix(r.Message, "calling notifications/") ||
		r.Level == slog.LevelError && r.Message == "method removed in the new protocol" {
		if !h.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(attrs)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}
