package upstream

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/wardenmcp/warden/config"
)

// StateNeedsLogin is the state of an HTTP server that refuses Warden until a
// person logs in (warden auth login SERVER): no backoff, no retries.
const StateNeedsLogin State = "needs_login"

// ErrAuthRequired is returned for a server that needs a person to log in.
var ErrAuthRequired = errors.New("authorization required")

// Authorizer adds OAuth authorization to an HTTP upstream's requests
// (package oauth).
type Authorizer interface {
	// Transport wraps next: it adds server's token, refreshes it, and fails
	// requests with ErrAuthRequired when no valid token is left. The probe
	// of a resumed session (see ResumeProbe) gets its answer as it came.
	Transport(cfg *config.Server, next http.RoundTripper) http.RoundTripper
	// NeedsLogin reports whether server waits for a login, and a channel
	// closed when its authorization changes.
	NeedsLogin(server string) (bool, <-chan struct{})
}

type resumeProbeKey struct{}

// ResumeProbe reports whether req is the first request on a session resumed
// from the store. A 401 or 403 to it says the upstream no longer knows the
// session (many servers answer a forgotten session so), not that the token
// is bad: the session is replaced by one fresh initialize, and only a
// refusal of that means a person must log in.
func ResumeProbe(req *http.Request) bool { return req.Context().Value(resumeProbeKey{}) != nil }

func withResumeProbe(ctx context.Context) context.Context {
	return context.WithValue(ctx, resumeProbeKey{}, true)
}

// usesAuth reports whether cfg's requests go through the Authorizer: HTTP
// servers, unless the config sends its own Authorization header.
func usesAuth(a Authorizer, cfg *config.Server) bool {
	if a == nil || cfg.Transport == config.TransportStdio {
		return false
	}
	for k := range cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			return false
		}
	}
	return true
}

// login is whether a connection waits for a person to log in: asked of
// the Authorizer for a server whose requests go through it.
type login struct {
	name string
	auth Authorizer
	cfg  *atomic.Pointer[config.Server] // the connection's
}

// needed reports whether the connection waits for a login, and a channel
// closed when its authorization changes (nil without OAuth: never).
func (l login) needed() (bool, <-chan struct{}) {
	if !usesAuth(l.auth, l.cfg.Load()) {
		return false, nil
	}
	return l.auth.NeedsLogin(l.name)
}

// required is the error of a call refused for want of a login.
func (l login) required() error { return AuthRequired(l.name) }

// AuthRequired is the error of a call to server refused for want of a login.
func AuthRequired(server string) error { return &authError{server} }

type authError struct{ server string }

func (e *authError) Error() string {
	return "server " + e.server + " needs a person to authorize Warden: run warden auth login " + e.server
}
func (e *authError) Unwrap() error { return ErrAuthRequired }
