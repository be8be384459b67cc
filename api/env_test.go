package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/instances"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// testToken is the operator token of every test API.
const testToken = "operator-token-3f9a"

// env is the API over a real gateway and real stores (in t.TempDir()), with
// the servers of a config file; its config is what Deps.Config answers.
type env struct {
	*parts.Parts
	t   *testing.T
	cfg *config.Config
	h   http.Handler
}

// newEnv starts mcpServers (the JSON of a config's mcpServers) behind the
// API; opts change the Deps before the handler is built.
func newEnv(t *testing.T, mcpServers string, opts ...func(*Deps)) *env {
	t.Helper()
	p := parts.New(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e := &env{Parts: p, t: t, cfg: p.Start(t, mcpServers)}
	d := Deps{Version: "test", Token: testToken, Started: time.Now(), Gateway: p.Gateway,
		Approvals: p.Approvals, Writes: p.Writes, Activity: p.Activity, Events: p.Events, Auth: p.Auth,
		Config: e.configInfo, Sessions: func() any { return p.Sessions.List() }, SearchTokens: 42,
		Instances: func(ctx context.Context) ([]instances.Instance, error) {
			return instances.List(ctx, p.Store, time.Now())
		},
		Decisions: func(ctx context.Context, server string, limit int) ([]decisions.Decision, error) {
			return decisions.List(ctx, p.Store, server, limit)
		}}
	for _, f := range opts {
		f(&d)
	}
	e.h = Handler(d)
	return e
}

// configInfo is the config as the daemon shows it: servers sorted by
// name, an entry that never loaded with only its error.
func (e *env) configInfo() ConfigInfo {
	info := ConfigInfo{Path: e.cfg.Path, Listen: "127.0.0.1:0"}
	for name, err := range e.cfg.Broken {
		if e.cfg.Servers[name] == nil {
			info.Servers = append(info.Servers, ServerConfig{Name: name, ConfigError: err.Error()})
		}
	}
	for name, s := range e.cfg.Servers {
		target := s.DisplayURL()
		if s.Transport == config.TransportStdio {
			target = s.Command
		}
		hidden := map[string]bool{}
		for tool, o := range s.Tools {
			hidden[tool] = o.Hidden
		}
		info.Servers = append(info.Servers, ServerConfig{Name: name, Transport: s.Transport, Target: target,
			Trusted: s.Trusted, Disabled: s.Disabled, Hidden: hidden})
	}
	slices.SortFunc(info.Servers, func(a, b ServerConfig) int { return strings.Compare(a.Name, b.Name) })
	return info
}

// do sends a request with the operator token and answers the recorded
// response.
func (e *env) do(method, path, body string) *httptest.ResponseRecorder {
	e.t.Helper()
	return e.doAs(method, path, body, "Bearer "+testToken)
}

// doAs sends a request with the given Authorization header ("" for none).
func (e *env) doAs(method, path, body, authorization string) *httptest.ResponseRecorder {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

// decodeInto decodes a JSON answer, failing the test on anything else.
func decodeInto(t *testing.T, rec *httptest.ResponseRecorder, v any) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("answer %d with Content-Type %q, want application/json: %s", rec.Code, ct, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("answer %d is not the JSON expected (%v): %s", rec.Code, err, rec.Body)
	}
}

// refusal is an expected error answer: its status, code, and the words its
// message must hold (the reason and the command that resolves it).
type refusal struct {
	status int
	code   string
	says   []string
}

// expectError checks that rec is the error answer want describes.
func expectError(t *testing.T, rec *httptest.ResponseRecorder, want refusal) Error {
	t.Helper()
	var e Error
	decodeInto(t, rec, &e)
	if rec.Code != want.status || e.Error.Code != want.code {
		t.Fatalf("answer %d %q, want %d %q: %s", rec.Code, e.Error.Code, want.status, want.code, rec.Body)
	}
	for _, s := range want.says {
		if !strings.Contains(e.Error.Message, s) {
			t.Errorf("error message %q does not say %q", e.Error.Message, s)
		}
	}
	return e
}

// openStream opens an authenticated GET of a streaming route (events, a
// followed log) on srv. The stream ends with cancel, or with the test, or
// after 30 s.
func openStream(t *testing.T, srv *httptest.Server, path string) (*http.Response, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, cancel
}
