package upstream

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/wardenmcp/warden/config"
)

// SessionStore persists streamable-HTTP upstream sessions across restarts.
type SessionStore interface{}

// sessionTransport is the round tripper of a streamable-HTTP upstream. On top
// of headerTransport it decides what happens to the upstream session when the
// connection closes: kept for the next start (Warden stopping) or deleted
// (server removed or disabled).
type sessionTransport struct {
	*headerTransport
	log    *slog.Logger
	forget atomic.Bool // send the DELETE that closing a session makes
}

func newSessionTransport(cfg *config.Server, _ SessionStore, log *slog.Logger) *sessionTransport {
	return &sessionTransport{headerTransport: newHeaderTransport(cfg.Headers), log: log}
}

func (t *sessionTransport) endSessionOnClose(forget bool) { t.forget.Store(forget) }

func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete && !t.forget.Load() {
		// Warden is stopping, not removing the server: keep the session.
		return localResponse(req, http.StatusNoContent), nil
	}
	return t.headerTransport.RoundTrip(req)
}

func localResponse(req *http.Request, code int) *http.Response {
	return &http.Response{
		StatusCode: code, Status: http.StatusText(code),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")),
		Request: req,
	}
}
