package upstream

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// subscribeServer is an in-process MCP server over streamable HTTP that
// records subscription changes.
type subscribeServer struct {
	mu   sync.Mutex
	log  []string
	fail int // subscribes to refuse
	srv  *mcp.Server
}

func (s *subscribeServer) record(e string) {
	s.mu.Lock()
	s.log = append(s.log, e)
	s.mu.Unlock()
}

func (s *subscribeServer) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func startSubscribeServer(t *testing.T) (*subscribeServer, string) {
	s := &subscribeServer{}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, r *mcp.SubscribeRequest) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.fail > 0 {
				s.fail--
				s.log = append(s.log, "!"+r.Params.URI)
				return fmt.Errorf("not now")
			}
			s.log = append(s.log, "+"+r.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error {
			s.record("-" + r.Params.URI)
			return nil
		},
	})
	s.srv.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: "x"}}}, nil
	})
	hs := fixture.ServeSDK(t, s.srv, nil)
	return s, hs.URL
}

func waitEvents(t *testing.T, s *subscribeServer, want ...string) {
	t.Helper()
	var got []string
	testenv.Poll(20*time.Second, func() bool { got = s.events(); return len(got) >= len(want) })
	if !slices.Equal(got, want) {
		t.Fatalf("upstream saw %v, want %v", got, want)
	}
}

// Followers share one upstream subscription: the first subscribes, the last
// to leave (unsubscribing, or its session ending) unsubscribes, and a new
// upstream session is subscribed again.
func TestSubscriptionsAreShared(t *testing.T) {
	s, url := startSubscribeServer(t)
	c := Start(&config.Server{Name: "subs", URL: url, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{})
	defer c.Stop()
	ctx := context.Background()
	a, b := new(int), new(int)
	for _, who := range []any{a, b, a} {
		if err := c.Subscribe(ctx, "test://r", who); err != nil {
			t.Fatal(err)
		}
	}
	waitEvents(t, s, "+test://r")
	if err := c.Unsubscribe(ctx, "test://r", a); err != nil {
		t.Fatal(err)
	}
	if err := c.Unsubscribe(ctx, "test://r", a); err != nil { // again: nothing to do
		t.Fatal(err)
	}
	waitEvents(t, s, "+test://r")

	for ss := range s.srv.Sessions() { // the upstream drops Warden's session
		ss.Close()
	}
	waitEvents(t, s, "+test://r", "+test://r")

	c.Unfollow(b)
	waitEvents(t, s, "+test://r", "+test://r", "-test://r")
}

// A subscription the upstream refused to make again after a reconnect is
// made when the next follower comes; a connection that replaces another
// (a changed config) carries its followers on.
func TestSubscriptionsRecover(t *testing.T) {
	s, url := startSubscribeServer(t)
	cfg := &config.Server{Name: "subs", URL: url, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}
	c := Start(cfg, Options{})
	ctx := context.Background()
	if err := c.Subscribe(ctx, "test://r", new(int)); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.fail = 1
	s.mu.Unlock()
	for ss := range s.srv.Sessions() {
		ss.Close()
	}
	waitEvents(t, s, "+test://r", "!test://r")
	if err := c.Subscribe(ctx, "test://r", new(int)); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, s, "+test://r", "!test://r", "+test://r")

	c.Stop()
	next := Start(cfg, Options{})
	defer next.Stop()
	next.Adopt(c)
	waitEvents(t, s, "+test://r", "!test://r", "+test://r", "+test://r")
}

// gatePeer is a Peer that says whether clients may hear from the server and
// ignores the rest.
type gatePeer struct {
	Peer
	exposed atomic.Bool
}

func (p *gatePeer) Exposed(string) bool                                    { return p.exposed.Load() }
func (p *gatePeer) StateChanged(string, Status)                            {}
func (p *gatePeer) Inventory(string, *Inventory)                           {}
func (p *gatePeer) Log(context.Context, string, *mcp.LoggingMessageParams) {}

// A server clients may not hear from (a quarantined one) is asked for no log
// messages and no subscriptions, also on a new session; exposed again, it is
// asked for the level and the resources clients want.
func TestNotExposedIsAskedNothing(t *testing.T) {
	s, url := startSubscribeServer(t)
	s.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams]); ok {
				s.record("level " + string(r.Params.Level))
			}
			return next(ctx, method, req)
		}
	})
	p := &gatePeer{}
	p.exposed.Store(true)
	c := Start(&config.Server{Name: "subs", URL: url, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{Peer: p})
	defer c.Stop()
	ctx := context.Background()
	if err := c.Subscribe(ctx, "test://r", new(int)); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, s, "+test://r")

	p.exposed.Store(false)
	if err := c.SetLogLevel(ctx, "debug"); err != nil {
		t.Fatal(err)
	}
	for ss := range s.srv.Sessions() { // a new session while hidden
		ss.Close()
	}
	var st Status
	if !testenv.Poll(20*time.Second, func() bool { st = c.Status(); return st.Reconnects > 0 && st.State == StateReady }) {
		t.Fatalf("no new session in 20s: %+v", st)
	}
	waitEvents(t, s, "+test://r")

	p.exposed.Store(true)
	c.Expose()
	// The new session's own resubscription may have begun only now.
	testenv.Poll(20*time.Second, func() bool { return len(s.events()) >= 3 })
	got := s.events()
	slices.Sort(got)
	if !slices.Equal(got, []string{"+test://r", "+test://r", "level debug"}) {
		t.Fatalf("once exposed, the upstream saw %v; want the level and the subscription on the new session", s.events())
	}
}
