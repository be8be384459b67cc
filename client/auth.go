package client

import (
	"context"
	"net/http"
	"time"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/oauth"
)

// AuthLogin starts an upstream OAuth login (POST /v1/servers/{s}/auth/login).
// Discovery and registration can take a while, so it waits up to a minute.
func (c *Client) AuthLogin(ctx context.Context, server string) (*oauth.LoginStarted, error) {
	var out oauth.LoginStarted
	return &out, c.exchange(ctx, 70*time.Second, http.MethodPost, serverPath(server, "/auth/login"), struct{}{}, &out)
}

// AuthStatus answers GET /v1/servers/{s}/auth.
func (c *Client) AuthStatus(ctx context.Context, server string) (*oauth.Info, error) {
	var out oauth.Info
	return &out, c.do(ctx, http.MethodGet, serverPath(server, "/auth"), nil, &out)
}

// AuthLogout revokes and forgets a server's tokens (DELETE /v1/servers/{s}/auth).
func (c *Client) AuthLogout(ctx context.Context, server string) (*api.AuthLogout, error) {
	var out api.AuthLogout
	return &out, c.do(ctx, http.MethodDelete, serverPath(server, "/auth"), nil, &out)
}
