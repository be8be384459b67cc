package surface_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/callers"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/testenv"
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

// sharedPair serves two Surfaces over one gateway (fx and rich), each with
// its own handle on one PostgreSQL store, as two instances have.
func sharedPair(t *testing.T) (e *env, other *httptest.Server, url string) {
	e, other, _, url = sharedPairOf(t)
	return e, other, url
}

// sharedPairOf is sharedPair, also answering the other Surfaces.
func sharedPairOf(t *testing.T) (e *env, other *httptest.Server, s *surface.Surfaces, url string) {
	t.Helper()
	fx, rich := fixture.NewServer(fixture.Options{}), fixture.NewRich(t)
	e = newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}, "rich": {"url": %q, "trusted": true}}`, fx.Serve(t), rich.URL), 0, 0)
	e.WaitListed(t, "fx")
	e.WaitListed(t, "rich")
	url = pgtest.Start(t, pgtest.Options{}).URL()
	open := func() store.Store {
		st, err := store.Open(ctx(t), store.Options{URL: url, Key: "a key for the tests, long enough"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	e.S.ShareSessions(open())
	s = surface.New(e.Gateway, slog.New(slog.DiscardHandler), "test", 0, 0)
	t.Cleanup(s.Close)
	s.ShareSessions(open())
	other = httptest.NewServer(s)
	t.Cleanup(other.Close)
	for _, server := range []string{"fx", "rich"} {
		if err := s.WaitListed(ctx(t), server, e.Gateway.Listed(server).Version); err != nil {
			t.Fatal(err)
		}
	}
	return e, other, s, url
}

// Alone on the embedded store, a session is not shared: after a restart
// its client gets 404 and begins a new one, which lists everything again
// (it may have missed Warden's notifications meanwhile).
func TestEmbeddedStoreSharesNoSession(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	st, err := store.Open(ctx(t), store.Options{Path: filepath.Join(t.TempDir(), "warden.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e.S.ShareSessions(st)
	other := surface.New(e.Gateway, slog.New(slog.DiscardHandler), "test", 0, 0)
	defer other.Close()
	other.ShareSessions(st)
	srv := httptest.NewServer(other)
	defer srv.Close()
	id := openUnused(t, e.URL+"/mcp/fx")
	resp, body := rawPost(t, srv.URL+"/mcp/fx", `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": id})
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a session of the embedded store answered elsewhere: %d %s", resp.StatusCode, body)
	}
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

// The client's answers to what an upstream asks during a call (elicitation,
// roots, sampling) may reach the other instance: they are relayed to the
// one that asked, and the call completes; an answer too large for a store
// event (a long sampled message) too.
func TestClientAnswersRelayed(t *testing.T) {
	t.Run("small", func(t *testing.T) { testClientAnswersRelayed(t, "m1") })
	t.Run("large", func(t *testing.T) { testClientAnswersRelayed(t, strings.Repeat("m", 2*store.MaxMessage)) })
}

func testClientAnswersRelayed(t *testing.T, model string) {
	e, other, url := sharedPair(t)
	rr := &roundRobin{to: []string{e.URL, other.URL}}
	c := mcp.NewClient(&mcp.Implementation{Name: "balanced", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "alice"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: model, Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work"})
	cs, err := c.Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp/rich", HTTPClient: &http.Client{Transport: rr},
		DisableStandaloneSSE: true}, session2025)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 4 { // the call and its three answers take turns
		out, isErr, _, err := callText(t, cs, fixture.RichTool, map[string]any{})
		if err != nil || isErr || out != "alice|file:///work|"+model {
			t.Fatalf("ask %d: %.100q %v (%v)", i, out, isErr, err)
		}
	}
	// A large answer waited in the store; the sweep removes it once it
	// is a minute old, not before.
	st, err := store.Open(ctx(t), store.Options{URL: url, Key: "a key for the tests, long enough"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored := func() (n int) {
		if err := st.View(ctx(t), func(tx store.Tx) (err error) { n, err = tx.Count("client_relay"); return err }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if large := len(model) > store.MaxMessage; large != (stored() > 0) {
		t.Fatalf("answers kept in the store: %d; want some only for a large answer", stored())
	}
	now := time.Now()
	e.S.SweepSessionsAt(now, time.Hour)
	if len(model) > store.MaxMessage && stored() == 0 {
		t.Fatal("the sweep removed a relayed answer just kept")
	}
	e.S.SweepSessionsAt(now.Add(2*time.Minute), time.Hour)
	if n := stored(); n != 0 {
		t.Fatalf("%d relayed answers kept after the sweep a minute later", n)
	}
}

// watchCount is a store that counts the watches not stopped.
type watchCount struct {
	store.Store
	active atomic.Int64
}

func (w *watchCount) Watch(topic string, fn func(store.Event)) func() {
	stop := w.Store.Watch(topic, fn)
	w.active.Add(1)
	var once sync.Once
	return func() { once.Do(func() { w.active.Add(-1); stop() }) }
}

// Close stops following the store: a Surfaces closed before its store
// (a daemon stopping, a test) is handed no more events.
func TestCloseStopsSharing(t *testing.T) {
	e := newEnv(t, `{}`, 0, 0)
	st, err := store.Open(ctx(t), store.Options{Path: filepath.Join(t.TempDir(), "warden.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &watchCount{Store: st}
	s := surface.New(e.Gateway, slog.New(slog.DiscardHandler), "test", 0, 0)
	s.ShareSessions(w)
	s.Close()
	if n := w.active.Load(); n != 0 {
		t.Fatalf("%d watches of the store left after Close", n)
	}
}

// A session adopted by another instance is still its caller's: another
// caller's token on it is refused there too.
func TestAdoptedSessionIsTheirs(t *testing.T) {
	e, other, s, _ := sharedPairOf(t)
	cfg, err := config.Parse("", []byte(`{
		"clients": {
			"ro": {"tokenSha256": "`+testenv.TokenSHA256("ro-token")+`", "profile": "all"},
			"dev": {"tokenSha256": "`+testenv.TokenSHA256("dev-token")+`", "profile": "all"}
		},
		"profiles": {"all": {"classes": ["read", "write", "destructive"]}}
	}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.S.SetCallers(callers.New(cfg))
	s.SetCallers(callers.New(cfg))
	ro := e.connectAs(t, "ro-token", "/mcp", session2025)
	list := `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`
	for _, c := range []struct {
		token string
		want  int
	}{{"dev-token", http.StatusForbidden}, {"ro-token", http.StatusOK}, {"dev-token", http.StatusForbidden}} {
		resp, body := rawPost(t, other.URL+"/mcp", list, map[string]string{"Authorization": "Bearer " + c.token, "Mcp-Session-Id": ro.ID(), "Mcp-Protocol-Version": "2025-11-25"})
		if resp.StatusCode != c.want {
			t.Errorf("%s on ro's session, on the other instance: %d %.200s", c.token, resp.StatusCode, body)
		}
	}
}
