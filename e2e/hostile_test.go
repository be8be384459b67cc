package e2e

// End-to-end tests of issue 11 (items 1 and 2): a hostile upstream (the
// fixture-server's -hostile mode, over stdio, quarantined as every new
// server is) next to a well-behaved one, behind a real `warden serve`.
// What a server sends reaches only the calls and sessions made to it, and a
// quarantined server reaches no client at all until an operator approves it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// hsURI is the well-behaved server's resource, which the hostile one claims
// updates of.
const hsURI = "normal://r"

// hsNormal is the well-behaved upstream: an SDK server over HTTP whose tool
// "work" reports progress (when asked) and logs, then holds until the test
// releases it, and reports progress once more before answering.
type hsNormal struct {
	srv     *mcp.Server
	started chan struct{}
	release chan struct{}
}

func hsNewNormal(t *testing.T) (*hsNormal, string) {
	n := &hsNormal{started: make(chan struct{}, 8), release: make(chan struct{})}
	n.srv = mcp.NewServer(&mcp.Implementation{Name: "normal", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	n.srv.AddTool(&mcp.Tool{Name: "work", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			progress := func(p float64) {
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Message: "normal"})
				}
			}
			progress(1)
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "normal", Data: "normal"})
			n.started <- struct{}{}
			select {
			case <-n.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			progress(2)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	n.srv.AddResource(&mcp.Resource{URI: hsURI, Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: hsURI, Text: "normal"}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return n.srv }, nil))
	t.Cleanup(ts.Close)
	return n, ts.URL
}

// hsDaemon is a real `warden serve` with the servers "normal" (trusted) and
// "hostile" (quarantined, sending a round every 100ms).
type hsDaemon struct {
	t                       *testing.T
	bin, cfg, state, report string
	addr, token             string
	n                       *hsNormal
}

func hsStart(t *testing.T) *hsDaemon {
	t.Helper()
	n, url := hsNewNormal(t)
	dir := t.TempDir()
	d := &hsDaemon{t: t, bin: testenv.BuildBinary(t, "./cmd/warden"), cfg: filepath.Join(dir, "config.json"),
		state: filepath.Join(dir, "state"), report: filepath.Join(dir, "out", "hostile.json"),
		addr: "127.0.0.1:" + itoa(testenv.FreePort(t)), n: n}
	b, _ := json.Marshal(map[string]any{"listen": d.addr, "mcpServers": map[string]any{
		"normal": map[string]any{"url": url, "trusted": true},
		"hostile": map[string]any{"command": testenv.BuildBinary(t, fixturePkg),
			"args": []string{"-hostile", "-hostile-uri", hsURI, "-hostile-report", d.report},
			"cwd":  filepath.Dir(d.report)}, // a server writes its cwd, not any path
	}})
	if err := os.Mkdir(filepath.Dir(d.report), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.StartProcess(t, exec.Command(d.bin, "serve", "--config", d.cfg, "--state-dir", d.state))
	testenv.WaitHTTP(t, "http://"+d.addr+"/healthz", 20*time.Second)
	token, err := os.ReadFile(filepath.Join(d.state, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	d.token = strings.TrimSpace(string(token))
	wardentest.WaitFor(t, 30*time.Second, "both servers listed, the hostile one sending", func() bool {
		return d.server("normal").Tools.Approved == 1 && d.server("hostile").Tools.Pending > 0 && d.hostile().Rounds > 0
	})
	return d
}

func (d *hsDaemon) server(name string) api.Server {
	var s api.Server
	req, _ := http.NewRequest("GET", "http://"+d.addr+"/v1/servers/"+name, nil)
	req.Header.Set("Authorization", "Bearer "+d.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		d.t.Fatalf("GET /v1/servers/%s: %v", name, err)
	}
	return s
}

func (d *hsDaemon) cli(args ...string) {
	d.t.Helper()
	out, err := exec.Command(d.bin, append(args, "--config", d.cfg, "--state-dir", d.state)...).CombinedOutput()
	if err != nil {
		d.t.Fatalf("warden %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// hostile is the hostile server's latest report.
func (d *hsDaemon) hostile() fixture.HostileReport {
	var r fixture.HostileReport
	if b, err := os.ReadFile(d.report); err == nil {
		_ = json.Unmarshal(b, &r)
	}
	return r
}

// waitRounds waits until the hostile server has sent n more rounds.
func (d *hsDaemon) waitRounds(n int) {
	d.t.Helper()
	from := d.hostile().Rounds
	wardentest.WaitFor(d.t, 20*time.Second, fmt.Sprintf("%d more hostile rounds", n), func() bool { return d.hostile().Rounds >= from+n })
}

// expectRefused waits until each of the hostile server's requests of
// methods was answered n more times, and fails the test unless every one of
// those answers was an error.
func (d *hsDaemon) expectRefused(n int, methods ...string) {
	d.t.Helper()
	before := d.hostile().Requests
	outcome := func(r map[string]*fixture.RequestOutcome, m string) fixture.RequestOutcome {
		if r[m] == nil {
			return fixture.RequestOutcome{}
		}
		return *r[m]
	}
	var now map[string]*fixture.RequestOutcome
	wardentest.WaitFor(d.t, 20*time.Second, fmt.Sprintf("%v answered %d more times", methods, n), func() bool {
		now = d.hostile().Requests
		for _, m := range methods {
			b, o := outcome(before, m), outcome(now, m)
			if o.Answered+o.Errors < b.Answered+b.Errors+n {
				return false
			}
		}
		return true
	})
	for _, m := range methods {
		if b, o := outcome(before, m), outcome(now, m); o.Answered != b.Answered {
			d.t.Fatalf("the quarantined server's %s got %d answers that were not errors", m, o.Answered-b.Answered)
		}
	}
}

func (d *hsDaemon) connect(opts *mcp.ClientOptions) *mcp.ClientSession {
	d.t.Helper()
	return wardentest.ConnectURL(d.t, "http://"+d.addr+"/mcp", opts, nil)
}

// work calls the normal server's tool and returns once it is running; the
// returned function lets it finish and checks its answer.
func (d *hsDaemon) work(cs *mcp.ClientSession, token any) (finish func()) {
	d.t.Helper()
	done := hsCall(context.Background(), cs, "normal__work", nil, token)
	select {
	case <-d.n.started:
	case err := <-done:
		d.t.Fatalf("normal__work ended before it ran: %v", err)
	case <-time.After(20 * time.Second):
		d.t.Fatal("normal__work did not start in 20s")
	}
	d.t.Cleanup(func() { // a test that failed before finishing it
		select {
		case d.n.release <- struct{}{}:
		default:
		}
	})
	return func() {
		d.t.Helper()
		d.n.release <- struct{}{}
		if err := <-done; err != nil {
			d.t.Fatalf("normal__work: %v", err)
		}
	}
}

// hsCall calls a tool in the background (with a progress token unless nil).
func hsCall(ctx context.Context, cs *mcp.ClientSession, name string, args any, token any) <-chan error {
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(ctx, p)
		if err == nil && res.IsError {
			err = fmt.Errorf("isError: %s", wardentest.ResultText(res))
		}
		done <- err
	}()
	return done
}

// hsSeen records what reached a client, one line per message.
type hsSeen struct {
	mu    sync.Mutex
	lines []string
}

func (s *hsSeen) add(format string, args ...any) {
	s.mu.Lock()
	s.lines = append(s.lines, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *hsSeen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

func (s *hsSeen) count(substr string) int {
	n := 0
	for _, l := range s.all() {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

func (s *hsSeen) reset() {
	s.mu.Lock()
	s.lines = nil
	s.mu.Unlock()
}

func (s *hsSeen) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.add("progress %v %s", r.Params.ProgressToken, r.Params.Message)
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			s.add("log %v", r.Params.Data)
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			from := "genuine"
			if _, ok := r.Params.Meta[fixture.HostileMarker]; ok {
				from = fixture.HostileMarker
			}
			s.add("updated %s %s", r.Params.URI, from)
		},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { s.add("list_changed tools") },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { s.add("list_changed prompts") },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { s.add("list_changed resources") },
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			s.add("sampling %v", r.Params.Messages[0].Content.(*mcp.TextContent).Text)
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			s.add("elicitation %s", r.Params.Message)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}
}

// Progress: a call to the normal server, carrying a progress token, gets
// only its own server's progress, while the hostile server spoofs tokens
// (quarantined, then approved); the hostile server's own caller gets its
// genuine progress once it is approved.
func TestHostileProgressReachesOnlyItsCall(t *testing.T) {
	d := hsStart(t)
	a := &hsSeen{}
	acs := d.connect(a.options())
	checkOnlyNormal := func(when, token string) {
		t.Helper()
		wardentest.WaitFor(t, 20*time.Second, "the normal server's two progress notifications", func() bool { return a.count("normal") == 2 })
		got := slices.DeleteFunc(a.all(), func(l string) bool { return !strings.HasPrefix(l, "progress ") })
		if !slices.Equal(got, []string{"progress " + token + " normal", "progress " + token + " normal"}) {
			t.Fatalf("%s: the normal server's caller got %d progress notifications, want only its server's two: %v", when, len(got), got[:min(len(got), 10)])
		}
	}
	finish := d.work(acs, "a-1")
	d.waitRounds(3) // each round guesses 300 tokens
	finish()
	checkOnlyNormal("hostile quarantined", "a-1")

	d.cli("servers", "approve", "hostile", "--yes")
	b := &hsSeen{}
	bcs := d.connect(b.options())
	bctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bdone := hsCall(bctx, bcs, "hostile__"+fixture.ToolRead, map[string]any{"sleep_ms": 60000}, "b-1")
	wardentest.WaitFor(t, 20*time.Second, "the hostile server's progress for its own call", func() bool {
		return b.count("progress b-1 "+fixture.HostileMarker) > 0
	})
	a.reset()
	finish = d.work(acs, "a-2")
	d.waitRounds(3) // guessing, and sending for the token it saw
	finish()
	checkOnlyNormal("hostile approved", "a-2")
	cancel()
	<-bdone
	for _, l := range b.all() {
		if strings.HasPrefix(l, "progress ") && !strings.HasPrefix(l, "progress b-1 ") {
			t.Fatalf("the hostile server's caller got progress not for its call: %q", l)
		}
	}
}

// Log messages: a client at level debug on /mcp gets none of a quarantined
// server's, which is not even asked for them; once approved, the server is
// asked at the client's level and its messages get through.
func TestHostileLogsOnlyOnceApproved(t *testing.T) {
	d := hsStart(t)
	s := &hsSeen{}
	cs := d.connect(s.options())
	if err := cs.SetLoggingLevel(ctxT(t, 20*time.Second), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	d.work(cs, nil)()
	wardentest.WaitFor(t, 20*time.Second, "the normal server's log message", func() bool { return s.count("log normal") == 1 })
	d.waitRounds(2) // list changes from the start are over
	s.reset()
	d.waitRounds(3)
	if got := s.all(); len(got) != 0 {
		t.Fatalf("a quarantined server reached a client at level debug with %d messages: %v", len(got), got[:min(len(got), 10)])
	}
	if lv := d.hostile().LogLevels; len(lv) != 0 {
		t.Fatalf("the quarantined server was asked for log messages: %v", lv)
	}

	d.cli("servers", "approve", "hostile", "--yes")
	wardentest.WaitFor(t, 20*time.Second, "the approved server asked for the client's level", func() bool {
		return slices.Equal(d.hostile().LogLevels, []string{"debug"})
	})
	wardentest.WaitFor(t, 20*time.Second, "the approved server's log messages", func() bool {
		return s.count("log "+fixture.HostileMarker) > 0
	})
}

// Resource updates: a subscriber of the normal server's resource gets only
// that server's updates of it, whatever the hostile server claims; once
// approved, the hostile server's updates of its own resource reach its
// subscribers.
func TestHostileResourceUpdatesOnlyFromTheOwner(t *testing.T) {
	d := hsStart(t)
	s := &hsSeen{}
	cs := d.connect(s.options())
	if err := cs.Subscribe(ctxT(t, 20*time.Second), &mcp.SubscribeParams{URI: hsURI}); err != nil {
		t.Fatal(err)
	}
	genuine := func(when string) {
		t.Helper()
		d.waitRounds(3)
		if err := d.n.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: hsURI}); err != nil {
			t.Fatal(err)
		}
		wardentest.WaitFor(t, 20*time.Second, "the normal server's update", func() bool { return s.count("updated "+hsURI+" genuine") > 0 })
		if n := s.count("updated " + hsURI + " " + fixture.HostileMarker); n > 0 {
			t.Fatalf("%s: %d updates of %s from the hostile server reached its subscriber: %v", when, n, hsURI, s.all()[:min(len(s.all()), 10)])
		}
	}
	genuine("hostile quarantined")
	if sub := d.hostile().Subscribed; len(sub) != 0 {
		t.Fatalf("the quarantined server got subscriptions: %v", sub)
	}

	d.cli("servers", "approve", "hostile", "--yes")
	wardentest.WaitFor(t, 20*time.Second, "subscribing to the approved server's resource", func() bool {
		return cs.Subscribe(ctxT(t, 20*time.Second), &mcp.SubscribeParams{URI: fixture.HostileResource}) == nil
	})
	wardentest.WaitFor(t, 20*time.Second, "the approved server's updates of its resource", func() bool {
		return s.count("updated "+fixture.HostileResource) > 0
	})
	s.reset()
	genuine("hostile approved")
}

// Requests: a quarantined server's sampling, elicitation and roots requests
// are answered with an error and reach no client, also while a call to
// another server is in flight, and also when it is quarantined during a
// call of its own; approved, its requests reach its caller.
func TestHostileRequestsRefusedWhileQuarantined(t *testing.T) {
	d := hsStart(t)
	s := &hsSeen{}
	cs := d.connect(s.options())
	methods := []string{"sampling/createMessage", "elicitation/create", "roots/list"}
	finish := d.work(cs, nil)
	d.expectRefused(2, methods...)
	finish()
	if got := s.all(); len(got) != 0 {
		t.Fatalf("a quarantined server's requests reached a client: %v", got[:min(len(got), 10)])
	}

	d.cli("servers", "approve", "hostile", "--yes")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := hsCall(ctx, cs, "hostile__"+fixture.ToolRead, map[string]any{"sleep_ms": 60000}, nil)
	wardentest.WaitFor(t, 20*time.Second, "the approved server's requests reaching its caller", func() bool {
		return s.count("sampling "+fixture.HostileMarker) > 0 && s.count("elicitation "+fixture.HostileMarker) > 0
	})

	d.cli("servers", "quarantine", "hostile")
	d.waitRounds(2) // what it asked before is answered
	s.reset()
	d.expectRefused(2, methods...)
	if got := s.all(); len(got) != 0 {
		t.Fatalf("a server quarantined during its call still reached the caller: %v", got[:min(len(got), 10)])
	}
	cancel()
	<-done
}
