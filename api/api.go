package api

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/events"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/oauth"
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
	Config    func() ConfigInfo // the running config, for status and server lists
	Sessions  func() any        // persisted upstream sessions, safe to show
	Auth      *oauth.Manager    // upstream OAuth; nil: none
	// Caller, if set, refuses a request by what sent it (a process Warden
	// spawned), whatever token it holds.
	Caller func(*http.Request) error
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
}

// Handler serves /v1/.
func Handler(d Deps) http.Handler {
	a := &handler{Deps: d}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", a.status)
	mux.HandleFunc("GET /v1/servers", a.servers)
	mux.HandleFunc("GET /v1/servers/{s}", a.server)
	mux.HandleFunc("POST /v1/servers/{s}/approve", a.approveServer)
	mux.HandleFunc("POST /v1/servers/{s}/quarantine", a.quarantine)
	mux.HandleFunc("GET /v1/servers/{s}/tools", a.tools)
	mux.HandleFunc("POST /v1/servers/{s}/tools/approve", a.approveTools)
	mux.HandleFunc("POST /v1/servers/{s}/tools/block", a.block)
	mux.HandleFunc("POST /v1/servers/{s}/call", a.call)
	mux.HandleFunc("GET /v1/writes", a.writes)
	mux.HandleFunc("DELETE /v1/writes/{s}", a.clearWrites)
	mux.HandleFunc("GET /v1/sessions", a.sessions)
	mux.HandleFunc("GET /v1/activity", a.activity)
	mux.HandleFunc("GET /v1/events", a.events)
	mux.HandleFunc("POST /v1/servers/{s}/auth/login", a.authLogin)
	mux.HandleFunc("GET /v1/servers/{s}/auth", a.authStatus)
	mux.HandleFunc("DELETE /v1/servers/{s}/auth", a.authLogout)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s; see the REST API table in the README", r.Method, r.URL.Path))
	})
	return a.auth(mux)
}

type handler struct{ Deps }

// auth requires the operator token: agents reach only the MCP surfaces, so
// nothing they can send approves, unquarantines or clears anything.
func (a *handler) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) != 1 {
			fail(w, http.StatusUnauthorized, "unauthorized", "send Authorization: Bearer <token>, with the token from the file api-token in Warden's state dir (the warden CLI does this for you)")
			return
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

// decode reads a JSON body strictly: unknown fields are an error.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", "request body: "+err.Error())
		return false
	}
	return true
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
