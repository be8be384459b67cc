// Package parts assembles Warden's real policy parts (approvals, write
// ledger, activity log, sessions, OAuth, events, metrics) over an embedded
// store in a test's temp dir, and a gateway over them, without the daemon, for
// tests of the packages above the gateway (api, surface) at their own level.
// It is apart from wardentest, which runs the whole daemon: the daemon
// imports those packages, so their own tests cannot import wardentest.
package parts

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/events"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/storefault"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/metrics"
	"github.com/wardenmcp/warden/oauth"
	"github.com/wardenmcp/warden/sessions"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/upstream"
	"github.com/wardenmcp/warden/writes"
)

// Parts are the stores and the gateway of one test.
type Parts struct {
	Store     *storefault.Store // Store.Down cuts it off
	Approvals *approval.Registry
	Writes    *writes.Ledger
	Activity  *activity.Log
	Sessions  *sessions.Store
	Auth      *oauth.Manager
	Events    *events.Broker
	Metrics   *metrics.Metrics
	Gateway   *gateway.Gateway
}

// New opens the parts in t.TempDir() and a gateway with no servers, wired
// as the daemon wires them; everything is closed in t.Cleanup. Servers
// start with Gateway.Reconcile.
func New(t testing.TB, log *slog.Logger) *Parts {
	t.Helper()
	st, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	p := &Parts{Store: storefault.Wrap(st), Events: events.New(), Metrics: metrics.New("")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p.Approvals, err = approval.Open(t.Context(), p.Store)
	must(err)
	p.Writes, err = writes.Open(p.Store)
	must(err)
	t.Cleanup(p.Writes.Close)
	p.Activity, err = activity.Open(p.Store, 1000, time.Hour)
	must(err)
	t.Cleanup(func() { p.Activity.Close() })
	p.Sessions, err = sessions.Open(t.Context(), p.Store, "test")
	must(err)
	p.Auth, err = oauth.Open(t.Context(), p.Store, oauth.Options{Logger: log, Event: func(server string, data map[string]string) {
		p.Events.Publish(events.Event{Type: "auth", Server: server, Data: data})
	}})
	must(err)
	p.Gateway = gateway.New(gateway.Deps{Approvals: p.Approvals, Writes: p.Writes, Activity: p.Activity,
		Events: p.Events, Metrics: p.Metrics, Logger: log,
		Upstream: upstream.Options{Version: "test", Sessions: p.Sessions, Auth: p.Auth}})
	// Registered after the stores' cleanups, so it runs before them.
	t.Cleanup(p.Gateway.Close)
	return p
}

// Start reconciles the gateway to servers, parsed from a config file's
// mcpServers JSON (JSONC allowed), and answers the parsed config (with
// Broken entries too).
func (p *Parts) Start(t testing.TB, mcpServers string) *config.Config {
	t.Helper()
	cfg, err := config.ParseAll(filepath.Join(t.TempDir(), "config.json"), []byte(`{"mcpServers": `+mcpServers+`}`),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	p.Gateway.Reconcile(cfg.Servers)
	return cfg
}

// WaitListed waits until the gateway serves server's tools: a listing of
// its upstream's taken by the approval records. Not its connection's state:
// an on-demand server may be listed and idle again before a poll sees it
// ready.
func (p *Parts) WaitListed(t testing.TB, server string) {
	t.Helper()
	WaitFor(t, 30*time.Second, server+" listed", func() bool {
		return p.Gateway.Listed(server).Seq != 0 && len(p.Gateway.Tools(server)) > 0
	})
}

// WaitFor polls cond until it is true or fails the test after timeout
// (testenv.WaitFor).
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, timeout, what, cond)
}

// Poll asks cond until it is true (true) or timeout has passed (false)
// (testenv.Poll).
func Poll(timeout time.Duration, cond func() bool) bool { return testenv.Poll(timeout, cond) }
