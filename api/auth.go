package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/gateway"
)

// AuthLogout answers DELETE /v1/servers/{s}/auth.
type AuthLogout struct {
	Server  string `json:"server"`
	Revoked bool   `json:"revoked"` // the authorization server accepted the revocation
}

// authServer finds s's live config for the OAuth routes.
func (a *handler) authServer(w http.ResponseWriter, r *http.Request) (*config.Server, bool) {
	sc, ok := a.decidable(w, r.PathValue("s"))
	if !ok {
		return nil, false
	}
	cfg, live := a.Gateway.LiveConfig(sc.Name)
	switch {
	case a.Auth == nil:
		fail(w, http.StatusNotFound, "not_found", "this Warden has no OAuth support")
	case !live:
		fail(w, http.StatusConflict, "server_disabled", "server "+sc.Name+" is disabled: to log in to it, "+gateway.DisabledHelp)
	case cfg.Transport == config.TransportStdio:
		fail(w, http.StatusBadRequest, "not_http", "server "+sc.Name+" is a stdio server: OAuth is for HTTP servers")
	default:
		return cfg, true
	}
	return nil, false
}

func (a *handler) authStatus(w http.ResponseWriter, r *http.Request) {
	if cfg, ok := a.authServer(w, r); ok {
		reply(w, http.StatusOK, a.Auth.Status(cfg))
	}
}

func (a *handler) authLogin(w http.ResponseWriter, r *http.Request) {
	cfg, ok := a.authServer(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
	defer cancel()
	started, err := a.Auth.Login(ctx, cfg)
	if err != nil {
		code := http.StatusBadGateway
		if errors.Is(err, context.DeadlineExceeded) {
			code = http.StatusGatewayTimeout
		}
		fail(w, code, "login_failed", err.Error())
		return
	}
	reply(w, http.StatusOK, started)
}

func (a *handler) authLogout(w http.ResponseWriter, r *http.Request) {
	cfg, ok := a.authServer(w, r)
	if !ok {
		return
	}
	revoked, err := a.Auth.Logout(r.Context(), cfg)
	if err != nil {
		storeError(w, err)
		return
	}
	reply(w, http.StatusOK, AuthLogout{Server: cfg.Name, Revoked: revoked})
}
