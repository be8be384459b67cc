package surface

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// testSurfaces are surfaces over a gateway with no servers, served on
// loopback (the base URL); both stop when the test ends.
func testSurfaces(t *testing.T) (*gateway.Gateway, *Surfaces, string) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	g := parts.New(t, log).Gateway
	s := New(g, log, "test", 0, 0)
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return g, s, srv.URL
}

// waitListed waits until the surfaces serve what the gateway has taken of
// server's listing.
func waitListed(t *testing.T, g *gateway.Gateway, s *Surfaces, server string) {
	t.Helper()
	var l gateway.Listing
	parts.WaitFor(t, 20*time.Second, server+" listed", func() bool { l = g.Listed(server); return l.Seq != 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitListed(ctx, server, l.Version); err != nil {
		t.Fatal(err)
	}
}

// Servers starting have their lists built once each, when their first
// listing is taken: not when their records are made, nor when their
// connection starts, nor once more for the records their listing made.
func TestListsBuiltOnceAtStart(t *testing.T) {
	g, s, _ := testSurfaces(t)
	const n = 8
	servers := map[string]*config.Server{}
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		servers[name] = &config.Server{Name: name, URL: fixture.NewServer(fixture.Options{}).Serve(t), Transport: config.TransportHTTP,
			Trusted: true, CallTimeout: config.DefaultCallTimeout}
	}
	g.Reconcile(servers)
	for name := range servers {
		waitListed(t, g, s, name)
	}
	told, rebuilt := s.listed.told.Load(), s.listed.rebuilds.Load()
	t.Logf("%d servers started: surfaces told %d times, lists rebuilt %d times", n, told, rebuilt)
	if told != n || rebuilt != n {
		t.Fatalf("%d servers started: told %d times, rebuilt %d times; want %d and %d", n, told, rebuilt, n, n)
	}
}

// WaitListed returns only once the lists served reflect the version: while
// the aggregated view cannot be rebuilt (its lock held here), it waits, and
// once it returns a client lists every tool.
func TestWaitListedWaitsForTheLists(t *testing.T) {
	g, s, url := testSurfaces(t)
	up := fixture.NewServer(fixture.Options{Tools: 300})
	n := len(up.ToolNames())

	s.agg.mu.Lock()
	g.Reconcile(map[string]*config.Server{"s": {Name: "s", URL: up.Serve(t), Transport: config.TransportHTTP, Trusted: true, CallTimeout: 10 * time.Second}})
	var l gateway.Listing
	parts.WaitFor(t, 20*time.Second, "s listed", func() bool { l = g.Listed("s"); return l.Seq != 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	err := s.WaitListed(ctx, "s", l.Version)
	cancel()
	s.agg.mu.Unlock()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitListed answered %v while /mcp's lists could not be rebuilt; want it to wait", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitListed(ctx, "s", l.Version); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	listed := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed++
	}
	if listed != n {
		t.Fatalf("after WaitListed /mcp lists %d tools, want %d", listed, n)
	}
}
