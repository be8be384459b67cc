package surface

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/events"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/metrics"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/writes"
)

// A server's own endpoint is built when first used, not when the server
// connects: then it lists what the server has, and follows its changes.
func TestServerViewBuiltOnFirstUse(t *testing.T) {
	st, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "warden.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	approvals, err := approval.Open(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := writes.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	log, err := activity.Open(st, 100, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	g := gateway.New(gateway.Deps{Approvals: approvals, Writes: ledger, Activity: log, Events: events.New(), Metrics: metrics.New(""),
		Logger: slog.New(slog.DiscardHandler)})
	defer g.Close()
	s := New(g, slog.New(slog.DiscardHandler), "test", 0, 0)
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()

	f := fixture.NewServer(fixture.Options{})
	g.Reconcile(map[string]*config.Server{"up": {Name: "up", URL: f.Serve(t), Transport: config.TransportHTTP, Trusted: true, CallTimeout: config.DefaultCallTimeout}})
	awaitTools(t, srv.URL+"/mcp", func(names []string) bool { return slices.Contains(names, "up__echo") })
	if s.built("up") != nil {
		t.Fatal("the server's own view was built before its endpoint was used")
	}

	awaitTools(t, srv.URL+"/mcp/up", func(names []string) bool { return slices.Contains(names, "delete_value") })
	f.RemoveTools(fixture.ToolDelete)
	awaitTools(t, srv.URL+"/mcp/up", func(names []string) bool { return !slices.Contains(names, "delete_value") })
}

// awaitTools lists the tools of the endpoint at url until ok says they are
// as expected, listing again on each list_changed notification.
func awaitTools(t *testing.T, url string, ok func([]string) bool) {
	t.Helper()
	changed := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	timeout := time.After(20 * time.Second)
	for {
		var names []string
		for tool, err := range cs.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Name)
		}
		if ok(names) {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%s lists %v, not what was awaited, after 20s", url, names)
		}
	}
}
