package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// bigTools is how many generated tools the "big" upstream offers: more than
// one page of the SDK's default page size (1000) on both sides of Warden.
const bigTools = 1500

// passWarden is one daemon shared by the pass-through tests: the conformance
// fixture ("everything", streamable HTTP), a fixture with bigTools generated
// tools ("big") and a plain fixture ("slow") for cancellation.
type passWarden struct {
	w    *wardentest.Warden
	slow *fixture.Fixture
}

func startPassWarden(t *testing.T) *passWarden {
	t.Helper()
	slow := fixture.NewServer(fixture.Options{Name: "slow"})
	big := fixture.NewServer(fixture.Options{Name: "big", Tools: bigTools})
	w := wardentest.Start(t, map[string]any{
		"everything": map[string]any{"url": testenv.StartEverythingServer(t), "trusted": true},
		"big":        map[string]any{"url": big.Serve(t), "trusted": true},
		"slow":       map[string]any{"url": slow.Serve(t), "trusted": true},
	})
	for _, s := range []string{"everything", "big", "slow"} {
		w.WaitReady(t, s)
	}
	return &passWarden{w: w, slow: slow}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// One daemon, many rules: pass-through on the aggregated /mcp.
func TestPassThroughAggregated(t *testing.T) {
	p := startPassWarden(t)
	w := p.w

	// Rule 4: every supported protocol version can list and call tools.
	t.Run("protocol versions", func(t *testing.T) {
		for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
			t.Run(v, func(t *testing.T) {
				cs := w.ConnectWith(t, "/mcp", nil, &mcp.ClientSessionOptions{ProtocolVersion: v})
				if got := cs.InitializeResult().ProtocolVersion; got != v {
					t.Fatalf("negotiated %q, asked for %q", got, v)
				}
				if names := wardentest.ToolNames(t, cs); !slices.Contains(names, "everything__test_simple_text") || !slices.Contains(names, "slow__echo") {
					t.Fatalf("tools/list lacks everything__test_simple_text or slow__echo (%d tools)", len(names))
				}
				if got := wardentest.CallText(t, cs, "everything__test_simple_text", map[string]any{}); !strings.Contains(got, "simple text") {
					t.Fatalf("test_simple_text answered %q", got)
				}
				if got := wardentest.CallText(t, cs, "slow__echo", map[string]any{"v": v}); !strings.Contains(got, v) {
					t.Fatalf("slow__echo answered %q", got)
				}
			})
		}
	})

	t.Run("prompts", func(t *testing.T) {
		cs := w.Connect(t, "/mcp", nil)
		var names []string
		for pr, err := range cs.Prompts(ctxT(t, 20*time.Second), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, pr.Name)
		}
		for _, want := range []string{"everything__test_simple_prompt", "everything__test_prompt_with_arguments"} {
			if !slices.Contains(names, want) {
				t.Fatalf("prompts/list lacks %s: %v", want, names)
			}
		}
		res, err := cs.GetPrompt(ctxT(t, 20*time.Second), &mcp.GetPromptParams{
			Name: "everything__test_prompt_with_arguments", Arguments: map[string]string{"arg1": "alpha-1", "arg2": "beta-2"}})
		if err != nil {
			t.Fatalf("prompts/get: %v", err)
		}
		var text strings.Builder
		for _, m := range res.Messages {
			if tc, ok := m.Content.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if !strings.Contains(text.String(), "alpha-1") || !strings.Contains(text.String(), "beta-2") {
			t.Fatalf("prompt text does not carry the arguments: %q", text.String())
		}
		if _, err := cs.GetPrompt(ctxT(t, 20*time.Second), &mcp.GetPromptParams{Name: "test_simple_prompt"}); err == nil {
			t.Fatal("an unprefixed prompt name was accepted on /mcp")
		}
	})

	t.Run("resources", func(t *testing.T) {
		cs := w.Connect(t, "/mcp", nil)
		var uris []string
		for r, err := range cs.Resources(ctxT(t, 20*time.Second), nil) {
			if err != nil {
				t.Fatal(err)
			}
			uris = append(uris, r.URI)
		}
		for _, want := range []string{"test://static-text", "test://static-binary", "test://watched-resource"} {
			if !slices.Contains(uris, want) {
				t.Fatalf("resources/list lacks %s: %v", want, uris)
			}
		}
		var templates []string
		for rt, err := range cs.ResourceTemplates(ctxT(t, 20*time.Second), nil) {
			if err != nil {
				t.Fatal(err)
			}
			templates = append(templates, rt.URITemplate)
		}
		if !slices.Contains(templates, "test://template/{id}/data") {
			t.Fatalf("resources/templates/list lacks test://template/{id}/data: %v", templates)
		}
		rr, err := cs.ReadResource(ctxT(t, 20*time.Second), &mcp.ReadResourceParams{URI: "test://static-text"})
		if err != nil || len(rr.Contents) == 0 || rr.Contents[0].Text == "" {
			t.Fatalf("read test://static-text: %v %+v", err, rr)
		}
		rr, err = cs.ReadResource(ctxT(t, 20*time.Second), &mcp.ReadResourceParams{URI: "test://static-binary"})
		if err != nil || len(rr.Contents) == 0 || len(rr.Contents[0].Blob) == 0 {
			t.Fatalf("read test://static-binary: %v %+v", err, rr)
		}
		rr, err = cs.ReadResource(ctxT(t, 20*time.Second), &mcp.ReadResourceParams{URI: "test://template/4711/data"})
		if err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text+rr.Contents[0].URI, "4711") {
			t.Fatalf("read through the template: %v %+v", err, rr)
		}
	})

	// Updates reach subscribed clients. Clients following one resource
	// share one upstream subscription: one unsubscribing, or going away,
	// leaves the others' updates alone.
	t.Run("subscribe", func(t *testing.T) {
		const uri = "test://watched-resource"
		follow := func() (*mcp.ClientSession, chan string) {
			updated := make(chan string, 16)
			cs := w.Connect(t, "/mcp", &mcp.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
					select {
					case updated <- r.Params.URI:
					default:
					}
				},
			})
			if err := cs.Subscribe(ctxT(t, 20*time.Second), &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatalf("resources/subscribe: %v", err)
			}
			return cs, updated
		}
		// waitUpdate waits for an update sent after it was called.
		waitUpdate := func(updated chan string, what string) {
			t.Helper()
			for len(updated) > 0 {
				<-updated
			}
			select {
			case got := <-updated: // the fixture updates it every 3s
				if got != uri {
					t.Fatalf("%s: update for %q", what, got)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no notifications/resources/updated within 10s\n%s", what, w.Logs)
			}
		}
		a, aUpdates := follow()
		waitUpdate(aUpdates, "after subscribing")
		b, bUpdates := follow()
		c, _ := follow()
		if err := a.Unsubscribe(ctxT(t, 20*time.Second), &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatalf("resources/unsubscribe: %v", err)
		}
		waitUpdate(bUpdates, "after another client unsubscribed")
		c.Close()
		// A sleep: its session ends on Warden's side, which nothing outside
		// Warden signals.
		time.Sleep(200 * time.Millisecond)
		waitUpdate(bUpdates, "after another subscribed client went away")
		if err := b.Unsubscribe(ctxT(t, 20*time.Second), &mcp.UnsubscribeParams{URI: uri}); err != nil {
			t.Fatalf("resources/unsubscribe: %v", err)
		}
	})

	t.Run("completion", func(t *testing.T) {
		cs := w.Connect(t, "/mcp", nil)
		res, err := cs.Complete(ctxT(t, 20*time.Second), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "everything__test_prompt_with_arguments"},
			Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "a"},
		})
		if err != nil || res == nil {
			t.Fatalf("completion/complete on a prefixed prompt ref: %v", err)
		}
		if _, err := cs.Complete(ctxT(t, 20*time.Second), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "no_such__prompt"},
			Argument: mcp.CompleteParamsArgument{Name: "x", Value: "a"},
		}); err == nil {
			t.Fatal("completion on an unknown prompt ref succeeded")
		}
	})

	t.Run("logging", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		cs := w.Connect(t, "/mcp", &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
				mu.Lock()
				got = append(got, fmt.Sprint(r.Params.Data))
				mu.Unlock()
			},
		})
		if err := cs.SetLoggingLevel(ctxT(t, 20*time.Second), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatalf("logging/setLevel: %v", err)
		}
		wardentest.CallText(t, cs, "everything__test_tool_with_logging", map[string]any{})
		wardentest.WaitFor(t, 10*time.Second, "three log messages from test_tool_with_logging", func() bool {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, s := range got {
				if strings.Contains(s, "Tool execution") || strings.Contains(s, "Tool processing") {
					n++
				}
			}
			return n >= 3
		})
	})

	// Log messages an upstream sends during a call reach that call's
	// session only, even with two sessions calling at once.
	t.Run("logging with two sessions", func(t *testing.T) {
		type sess struct {
			cs   *mcp.ClientSession
			mu   sync.Mutex
			logs int
		}
		mk := func() *sess {
			s := &sess{}
			s.cs = w.Connect(t, "/mcp", &mcp.ClientOptions{
				LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
					if strings.Contains(fmt.Sprint(r.Params.Data), "Tool ") {
						s.mu.Lock()
						s.logs++
						s.mu.Unlock()
					}
				},
			})
			if err := s.cs.SetLoggingLevel(ctxT(t, 20*time.Second), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatalf("logging/setLevel: %v", err)
			}
			return s
		}
		a, b := mk(), mk()
		var wg sync.WaitGroup
		res := make([]string, 2)
		for i, s := range []*sess{a, b} {
			wg.Go(func() { res[i] = wardentest.TryCall(s.cs, "everything__test_tool_with_logging", map[string]any{}) })
		}
		wg.Wait()
		for _, r := range res {
			if strings.HasPrefix(r, "error") {
				t.Fatal(r)
			}
		}
		wardentest.WaitFor(t, 5*time.Second, "three log messages for each session", func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			b.mu.Lock()
			defer b.mu.Unlock()
			return a.logs >= 3 && b.logs >= 3
		})
		time.Sleep(100 * time.Millisecond) // a sleep: time for a 4th message to arrive, which must NOT
		a.mu.Lock()
		b.mu.Lock()
		defer a.mu.Unlock()
		defer b.mu.Unlock()
		if a.logs != 3 || b.logs != 3 {
			t.Fatalf("sessions got %d and %d of the tool's log messages, want 3 each (their own)", a.logs, b.logs)
		}
	})

	t.Run("progress", func(t *testing.T) {
		type note struct {
			token    any
			progress float64
		}
		notes := make(chan note, 16)
		cs := w.Connect(t, "/mcp", &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
				notes <- note{r.Params.ProgressToken, r.Params.Progress}
			},
		})
		res, err := cs.CallTool(ctxT(t, 20*time.Second), &mcp.CallToolParams{
			Name: "everything__test_tool_with_progress", Arguments: map[string]any{},
			Meta: mcp.Meta{"progressToken": "client-token-7"},
		})
		if err != nil || res.IsError {
			t.Fatalf("test_tool_with_progress: %v %v", err, res)
		}
		var seen []float64
		deadline := time.After(5 * time.Second)
		for len(seen) < 3 {
			select {
			case n := <-notes:
				if n.token != "client-token-7" {
					t.Fatalf("progress carries token %v, want the client's own client-token-7", n.token)
				}
				seen = append(seen, n.progress)
			case <-deadline:
				t.Fatalf("got %d progress notifications (%v), want 3", len(seen), seen)
			}
		}
		if !slices.Equal(seen, []float64{0, 50, 100}) {
			t.Fatalf("progress values %v, want [0 50 100]", seen)
		}
	})

	// Sampling and elicitation go to the session whose call caused them,
	// even with two sessions calling at the same time.
	t.Run("server requests routed to their caller", func(t *testing.T) {
		type client struct {
			name      string
			cs        *mcp.ClientSession
			mu        sync.Mutex
			prompts   []string
			elicits   []string
			sampleRes string
			elicitRes string
		}
		mk := func(name string) *client {
			c := &client{name: name}
			c.cs = w.Connect(t, "/mcp", &mcp.ClientOptions{
				CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					var text string
					if len(r.Params.Messages) > 0 {
						if tc, ok := r.Params.Messages[0].Content.(*mcp.TextContent); ok {
							text = tc.Text
						}
					}
					c.mu.Lock()
					c.prompts = append(c.prompts, text)
					c.mu.Unlock()
					time.Sleep(200 * time.Millisecond) // keep both calls in flight
					return &mcp.CreateMessageResult{Role: "assistant", Model: "m-" + c.name,
						Content: &mcp.TextContent{Text: "answer-from-" + c.name}}, nil
				},
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					c.mu.Lock()
					c.elicits = append(c.elicits, r.Params.Message)
					c.mu.Unlock()
					time.Sleep(200 * time.Millisecond) // keep both calls in flight
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "user-" + c.name}}, nil
				},
			})
			return c
		}
		clients := []*client{mk("A"), mk("B")}
		for round := range 3 {
			var wg sync.WaitGroup
			for _, c := range clients {
				wg.Go(func() {
					c.sampleRes = wardentest.TryCall(c.cs, "everything__test_sampling", map[string]any{"prompt": fmt.Sprintf("prompt-of-%s-%d", c.name, round)})
				})
				wg.Go(func() {
					c.elicitRes = wardentest.TryCall(c.cs, "everything__test_elicitation", map[string]any{"message": fmt.Sprintf("question-for-%s-%d", c.name, round)})
				})
			}
			wg.Wait()
			for _, c := range clients {
				if !strings.Contains(c.sampleRes, "answer-from-"+c.name) {
					t.Fatalf("round %d: %s's test_sampling got %q: answered by the other session", round, c.name, c.sampleRes)
				}
				if !strings.Contains(c.elicitRes, "user-"+c.name) {
					t.Fatalf("round %d: %s's test_elicitation got %q: answered by the other session", round, c.name, c.elicitRes)
				}
			}
		}
		for _, c := range clients {
			for _, p := range c.prompts {
				if !strings.Contains(p, "prompt-of-"+c.name) {
					t.Fatalf("session %s was asked to sample another session's prompt %q", c.name, p)
				}
			}
			for _, m := range c.elicits {
				if !strings.Contains(m, "question-for-"+c.name) {
					t.Fatalf("session %s was asked another session's elicitation %q", c.name, m)
				}
			}
			if len(c.prompts) != 3 || len(c.elicits) != 3 {
				t.Fatalf("session %s got %d sampling and %d elicitation requests, want 3 each", c.name, len(c.prompts), len(c.elicits))
			}
		}
	})

	t.Run("cancellation reaches the upstream", func(t *testing.T) {
		cs := w.Connect(t, "/mcp", nil)
		before := p.slow.WritesCancelled()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow__write_value",
				Arguments: map[string]any{"key": "k", "value": "v", "sleep_ms": 20000}})
			errc <- err
		}()
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer dcancel()
		if err := p.slow.WaitWriteDispatches(dctx, 1); err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case <-errc:
		case <-time.After(5 * time.Second):
			t.Fatal("the cancelled call did not end within 5s")
		}
		wardentest.WaitFor(t, 5*time.Second, "the upstream to see the cancellation", func() bool {
			return p.slow.WritesCancelled() > before
		})
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("cancellation took %s", d)
		}
		if p.slow.WritesApplied() != 0 {
			t.Fatal("the cancelled write was applied upstream")
		}
	})

	// Rule 8: 1500+ tools come through the SDK's paging, with Warden's cursors.
	t.Run("list paging", func(t *testing.T) {
		cs := w.Connect(t, "/mcp", nil)
		first, err := cs.ListTools(ctxT(t, 30*time.Second), nil)
		if err != nil {
			t.Fatal(err)
		}
		if first.NextCursor == "" || len(first.Tools) >= bigTools {
			t.Fatalf("first page has %d tools and cursor %q: the aggregated list is not paged", len(first.Tools), first.NextCursor)
		}
		names := wardentest.ToolNames(t, cs)
		big := 0
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Fatalf("tool %s listed twice across pages", n)
			}
			seen[n] = true
			if strings.HasPrefix(n, "big__tool_") {
				big++
			}
		}
		if big != bigTools {
			t.Fatalf("listed %d big__tool_* tools over all pages, want %d (total %d)", big, bigTools, len(names))
		}
		if got := wardentest.CallText(t, cs, "big__"+fixture.GeneratedToolName(bigTools), map[string]any{}); !strings.Contains(got, "ok") {
			t.Fatalf("last generated tool answered %q", got)
		}
	})

	// Rule 7, after the calls above.
	t.Run("metrics", func(t *testing.T) {
		cs := w.Connect(t, "/mcp", nil)
		wardentest.CallText(t, cs, "slow__read_value", map[string]any{"key": "x"})
		resp, err := http.Get(w.URL("/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		for _, want := range []string{
			`warden_tool_calls_total{class="read",outcome="ok",server="slow"}`,
			`warden_tool_calls_total{class="destructive",outcome="ok",server="everything"}`,
			`warden_upstream_state{server="everything",state="ready"} 1`,
			`warden_upstream_state{server="slow",state="ready"} 1`,
			`warden_upstream_state{server="slow",state="backoff"} 0`,
			`warden_tool_call_duration_seconds_count{server="slow"}`,
		} {
			if !strings.Contains(body, want) {
				t.Fatalf("/metrics lacks %s\n%s", want, grepLines(body, "warden_"))
			}
		}
	})
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Rule 6: every path checks Host and Origin.
func TestHostOriginGuardEveryPath(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"x": map[string]any{"url": up.Serve(t), "trusted": true}})
	w.WaitReady(t, "x")
	paths := []string{"/healthz", "/metrics", "/v1/status", "/v1/events", "/mcp", "/mcp/x"}
	do := func(path, host, origin string) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		method, body := http.MethodGet, io.Reader(nil)
		if strings.HasPrefix(path, "/mcp") {
			method = http.MethodPost
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"g","version":"1"}}}`)
		}
		req, _ := http.NewRequestWithContext(ctx, method, w.URL(path), body)
		req.Header.Set("Authorization", "Bearer "+w.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		resp.Body.Close() // /v1/events streams: do not wait for its end
		return resp.StatusCode
	}
	for _, path := range paths {
		for _, host := range []string{"evil.example", "evil.example:80", "127.0.0.1.evil.example", "localhost.evil.example"} {
			if got := do(path, host, ""); got != http.StatusForbidden {
				t.Errorf("%s with Host %s: %d, want 403", path, host, got)
			}
		}
		for _, origin := range []string{"http://evil.example", "https://evil.example:1234", "null", "http://localhost.evil.example"} {
			if got := do(path, "", origin); got != http.StatusForbidden {
				t.Errorf("%s with Origin %s: %d, want 403", path, origin, got)
			}
		}
		for _, origin := range []string{"", "http://localhost:1234", "http://127.0.0.1:5173", "http://[::1]:3000"} {
			if got := do(path, "", origin); got >= 300 {
				t.Errorf("%s with Origin %q: %d, want it allowed", path, origin, got)
			}
		}
		if got := do(path, "localhost:7373", "http://localhost:1234"); got >= 300 {
			t.Errorf("%s with Host localhost: %d, want it allowed", path, got)
		}
	}
}
