package surface_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/surface"
)

// roundRobin sends each request to the next of its servers, as a load
// balancer without sticky sessions does.
type roundRobin struct {
	to   []string // base URLs
	next atomic.Int64
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	base, _ := url.Parse(rr.to[int(rr.next.Add(1))%len(rr.to)])
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = base.Scheme, base.Host, base.Host
	return http.DefaultTransport.RoundTrip(r)
}

// sharedPair serves two Surfaces over one gateway, their sessions shared
// through one store: two instances as far as client sessions go.
func sharedPair(t *testing.T) (*env, *httptest.Server, store.Store) {
	t.Helper()
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	st, err := store.Open(ctx(t), store.Options{Path: filepath.Join(t.TempDir(), "warden.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.S.ShareSessions(st)
	other := surface.New(e.Gateway, slog.New(slog.DiscardHandler), "test", 0, 0)
	t.Cleanup(other.Close)
	other.ShareSessions(st)
	srv := httptest.NewServer(other)
	t.Cleanup(srv.Close)
	if err := other.WaitListed(ctx(t), "fx", e.Gateway.Listed("fx").Version); err != nil {
		t.Fatal(err)
	}
	return e, srv, st
}

// A 2025 client's session, begun on one instance, goes on on the other:
// every second request lands there, and each is answered in the session.
// A DELETE on one ends it on both.
func TestSessionWithoutStickiness(t *testing.T) {
	e, other, _ := sharedPair(t)
	for _, path := range []string{"/mcp", "/mcp/fx", "/mcp?view=search"} {
		t.Run(path, func(t *testing.T) {
			rr := &roundRobin{to: []string{e.URL, other.URL}}
			c := mcp.NewClient(&mcp.Implementation{Name: "balanced", Version: "1"}, nil)
			cs, err := c.Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: e.URL + path, HTTPClient: &http.Client{Transport: rr},
				DisableStandaloneSSE: true}, session2025)
			if err != nil {
				t.Fatal(err)
			}
			id := cs.ID()
			for i := range 6 {
				if _, err := cs.ListTools(ctx(t), nil); err != nil {
					t.Fatalf("request %d, on %s: %v", i, rr.to[int(rr.next.Load())%2], err)
				}
			}
			if err := cs.Close(); err != nil { // DELETE, on one of them
				t.Fatal(err)
			}
			// The other instance hears of it through the store.
			for _, base := range []string{e.URL, other.URL} {
				parts.WaitFor(t, 10*time.Second, "the session ended on "+base, func() bool {
					resp, _ := rawPost(t, base+path, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": id})
					return resp.StatusCode == http.StatusNotFound
				})
			}
		})
	}
}

// A session whose instance is gone goes on on another.
func TestSessionOutlivesItsInstance(t *testing.T) {
	e, other, _ := sharedPair(t)
	first := httptest.NewServer(e.S)
	rr := &roundRobin{to: []string{first.URL}}
	c := mcp.NewClient(&mcp.Implementation{Name: "moved", Version: "1"}, nil)
	cs, err := c.Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: first.URL + "/mcp", HTTPClient: &http.Client{Transport: rr},
		DisableStandaloneSSE: true}, session2025)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	first.Close()
	rr.to = []string{other.URL}
	if out, isErr, _, err := callText(t, cs, "fx__"+fixture.ToolEcho, map[string]any{"text": "still here"}); err != nil || isErr {
		t.Fatalf("a call after its instance went: %q %v (%v)", out, isErr, err)
	}
}
