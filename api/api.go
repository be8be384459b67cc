package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/events"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/instances"
	"github.com/wardenmcp/warden/oauth"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/writes"
)

// Deps is what the API reads and changes.
type Deps struct {
	Version   string
	Token     string
	Started   time.Time
	Gateway   *gateway.Gateway
	Approvals *approval.Registry
	Writes    *writes.Ledger
	Activity  *activity.Log
	Events    *events.Broker
	Config    func() ConfigInfo                    // the running config, for status and server lists
	Sessions  func() any                           // persisted upstream sessions, safe to show
	Logs      func(server string) (LogFile, error) // a stdio server's stderr log
	Auth      *oauth.Manager                       // upstream OAuth; nil: none
	// SearchTokens is what the search view's tool list costs (ViewTokens).
	SearchTokens int
	// Socket, if set, says a request came on the state dir's socket: it
	// needs no token (Caller identifies the CLI there by the kernel's
	// record of the connecting process).
	Socket func(*http.Request) bool
	// Caller, if set, refuses a request by what sent it, whatever token it
	// holds: a process Warden spawned, or one that cannot be identified.
	// It runs after the token is checked: finding out reads /proc.
	Caller func(*http.Request) error
	// UILogin mints a one-time code that the review page (/ui/) exchanges
	// for a browser session; nil: no review page.
	UILogin func() (string, error)
	// Instances lists the instances sharing the store (GET /v1/instances);
	// with SharedStore, GET /v1/status shows them too.
	Instances   func(context.Context) ([]instances.Instance, error)
	SharedStore bool
	// Callers, if set, is the known callers now: with an identity
	// provider, its access tokens of the people "operators" names are
	// accepted beside the operator token, each with its role.
	Callers func() *callers.Policy
	// Decisions lists operators' decisions, newest first (only server's
	// when set).
	Decisions func(ctx context.Context, server string, limit int) ([]decisions.Decision, error)
}

// LogFile is a stdio server's stderr log (secrets already masked).
type LogFile interface {
	// Copy writes the last lines (all when lines <= 0), then with follow
	// what is written after, until ctx is done; flush runs after each piece.
	Copy(ctx context.Context, w io.Writer, lines int, follow bool, flush func()) error
}

// ConfigInfo is the part of the running config the API shows.
type ConfigInfo struct {
	Path, Listen, ReloadError string
	Servers                   []ServerConfig
}

// ServerConfig is a configured server without secrets.
type ServerConfig struct {
	Name, Transport, Target string
	Trusted, Disabled       bool
	Hidden                  map[string]bool
	ConfigError             string // why its entry in the file cannot be loaded
}

// Handler serves /v1/: the routes of the table in openapi.go.
func Handler(d Deps) http.Handler {
	// Built on first use: describing every type took 10 ms of the
	// daemon's start, while the servers start.
	a := &handler{Deps: d, doc: sync.OnceValues(func() ([]byte, error) { return document(d.Version) })}
	public, private := a.muxes()
	public.Handle("/v1/", a.auth(private))
	return public
}

// muxes route the table's public routes and, behind the token, the others.
func (a *handler) muxes() (public, private *http.ServeMux) {
	public, private = http.NewServeMux(), http.NewServeMux()
	for _, rt := range routes {
		mux := private
		if rt.public {
			mux = public
		}
		serve, role := rt.serve, rt.needs()
		mux.HandleFunc(rt.method+" "+rt.path, func(w http.ResponseWriter, r *http.Request) {
			if op := operatorOf(r); !rt.public && !op.May(role) {
				fail(w, http.StatusForbidden, "forbidden_role", fmt.Sprintf(
					`%s may not %s %s: that needs the %s role; an admin gives it in "operators" of Warden's config, such as {"user": %q, "role": %q}`,
					op, r.Method, r.URL.Path, role, op.Name, role))
				return
			}
			serve(a, w, r)
		})
	}
	private.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		if allowed := allowedMethods(r, public, private); len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			fail(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes %s, not %s; every route is described in GET /v1/openapi.json (no token needed)",
				r.URL.Path, strings.Join(allowed, " or "), r.Method))
			return
		}
		fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s; every route is described in GET /v1/openapi.json (no token needed)", r.Method, r.URL.Path))
	})
	return public, private
}

// allowedMethods are the methods the table serves at r's path, for a
// request that came with another one.
func allowedMethods(r *http.Request, muxes ...*http.ServeMux) []string {
	var out []string
	for _, rt := range routes {
		probe := &http.Request{Method: rt.method, URL: r.URL, Host: r.Host}
		for _, mux := range muxes {
			if _, pattern := mux.Handler(probe); pattern == rt.method+" "+rt.path && !slices.Contains(out, rt.method) {
				out = append(out, rt.method)
			}
		}
	}
	return out
}

type handler struct {
	Deps
	doc func() ([]byte, error) // the OpenAPI document
}

// operatorKey carries the operator a request acts as, from auth (or
// AsOperator, in the process) to the routes.
type operatorKey struct{}

// AsOperator is r, made in the process for op (the review page, for the
// person logged in): the API acts as op, with op's role and name on its
// decisions, whatever r's token. Nothing a client sends can do this.
func AsOperator(r *http.Request, op callers.Operator) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), operatorKey{}, op))
}

// operatorOf is the operator r acts as (the zero Operator, who may
// nothing, before auth).
func operatorOf(r *http.Request) callers.Operator {
	op, _ := r.Context().Value(operatorKey{}).(callers.Operator)
	return op
}

const unauthorized = "send Authorization: Bearer <token>, with the token from the file api-token in Warden's state dir (the warden CLI needs none: it uses the state dir's socket)"

// auth requires an operator: the local one (the CLI on the state dir's
// socket, the operator token), or a person "operators" names, by the
// identity provider's access token. Agents reach only the MCP surfaces,
// and a client's token of "clients" is never an operator's, so nothing
// they can send approves, unquarantines or clears anything.
func (a *handler) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.Context().Value(operatorKey{}).(callers.Operator); !ok {
			op, status, err := a.operator(r)
			if err != nil {
				fail(w, status, map[int]string{http.StatusUnauthorized: "unauthorized", http.StatusForbidden: "not_operator"}[status], err.Error())
				return
			}
			r = AsOperator(r, op)
		}
		if a.Caller != nil {
			if err := a.Caller(r); err != nil {
				fail(w, http.StatusForbidden, "forbidden_caller", err.Error())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// operator is who r's credentials name, or why none (with its status).
func (a *handler) operator(r *http.Request) (callers.Operator, int, error) {
	if a.Socket != nil && a.Socket(r) {
		return callers.Local, 0, nil
	}
	got, refused := callers.Bearer(r)
	switch {
	case refused != nil && refused.Missing:
		return callers.Operator{}, http.StatusUnauthorized, errors.New(unauthorized)
	case refused != nil:
		return callers.Operator{}, http.StatusUnauthorized, fmt.Errorf("%s; %s", refused.Description, unauthorized)
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) == 1 {
		return callers.Local, 0, nil
	}
	var p *callers.Policy
	if a.Callers != nil {
		p = a.Callers()
	}
	op, err := p.OperatorToken(r.Context(), got)
	switch {
	case err == nil:
		return op, 0, nil
	case errors.Is(err, callers.ErrNotOperator):
		return op, http.StatusForbidden, err
	case errors.Is(err, callers.ErrUnknownToken):
		return op, http.StatusUnauthorized, errors.New(unauthorized)
	}
	return op, http.StatusUnauthorized, fmt.Errorf("%v; or %s", err, unauthorized)
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func fail(w http.ResponseWriter, status int, code, msg string) {
	reply(w, status, Error{Error: ErrorBody{Code: code, Message: msg}})
}

// Fail answers an API request refused before it reaches the API (by the
// daemon's Host and Origin guard) in the API's error format.
func Fail(w http.ResponseWriter, status int, code, msg string) { fail(w, status, code, msg) }

// decode reads a JSON body strictly: one JSON object, no unknown fields
// (a second value would be dropped unread, and with it what it asked for).
// A refusal says where the route's body is described.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	switch {
	case errors.Is(err, io.EOF):
		err = errors.New("it is empty")
	case err == nil && dec.Decode(&json.RawMessage{}) != io.EOF:
		err = errors.New("send one JSON object, with nothing after it")
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("request body: %v; the body of %s is described in GET /v1/openapi.json", err, r.Pattern))
		return false
	}
	return true
}

// storeError answers a failure of the store: STORE_UNAVAILABLE (503) when
// it cannot be reached, so nothing was changed.
func storeError(w http.ResponseWriter, err error) {
	if errors.Is(err, store.ErrUnavailable) {
		fail(w, http.StatusServiceUnavailable, string(gateway.CodeStoreUnavailable),
			fmt.Sprintf("Warden could not reach its store, so nothing was changed (%v). To fix it, %s.", err, gateway.StoreHelp))
		return
	}
	fail(w, http.StatusInternalServerError, "store_error", err.Error())
}

// decisionError maps approval errors to answers.
func decisionError(w http.ResponseWriter, err error) {
	var mm *approval.HashMismatchError
	switch {
	case errors.As(err, &mm):
		reply(w, http.StatusConflict, Error{Error: ErrorBody{Code: "hash_mismatch", Message: err.Error(), Details: mm}})
	case errors.Is(err, approval.ErrUnknownServer):
		fail(w, http.StatusNotFound, "unknown_server", err.Error())
	case errors.Is(err, approval.ErrUnknownTool):
		fail(w, http.StatusNotFound, "unknown_tool", err.Error())
	case errors.Is(err, store.ErrUnavailable):
		storeError(w, err)
	default:
		fail(w, http.StatusBadRequest, "bad_request", err.Error())
	}
}

func queryInt(r *http.Request, name string, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get(name)); err == nil && n > 0 {
		return n
	}
	return def
}
