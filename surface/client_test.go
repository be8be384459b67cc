package surface_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
)

// heard is what a downstream client was told.
type heard struct {
	mu       sync.Mutex
	progress []string
	logs     []string
}

func (h *heard) add(list *[]string, s string) {
	h.mu.Lock()
	*list = append(*list, s)
	h.mu.Unlock()
}

func (h *heard) has(list *[]string, s string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(*list, s)
}

// answering is a client that answers elicitation ({"who": "Ada"}), roots
// and sampling, and records progress and log messages.
func answering(h *heard) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "Ada"}}, nil
		},
		CreateMessageWithToolsHandler: func(context.Context, *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return &mcp.CreateMessageWithToolsResult{Model: "client-model", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			h.add(&h.progress, fmt.Sprintf("%v %s", r.Params.ProgressToken, r.Params.Message))
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			h.add(&h.logs, fmt.Sprint(r.Params.Data))
		},
	}
}

func richEnv(t *testing.T) (*env, *fixture.Rich) {
	t.Helper()
	r := fixture.NewRich(t)
	e := newEnv(t, fmt.Sprintf(`{"r": {"url": %q, "trusted": true}}`, r.URL), 0, 0)
	e.WaitListed(t, "r")
	return e, r
}

const richAnswer = "Ada|file:///client-root|client-model"

// During a call, the upstream's requests reach the calling client and its
// answers go back, both on the fast path (a plain call) and through the SDK
// server (a call with a progress token); log messages at the session's
// level and progress under the client's token reach it too.
func TestUpstreamAsksTheCallingClient(t *testing.T) {
	e, _ := richEnv(t)
	for _, path := range []string{"/mcp", "/mcp/r"} {
		t.Run(path, func(t *testing.T) {
			h := &heard{}
			c := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, answering(h))
			c.AddRoots(&mcp.Root{URI: "file:///client-root"})
			cs, err := c.Connect(ctx(t), &mcp.StreamableClientTransport{Endpoint: e.URL + path}, session2025)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if err := cs.SetLoggingLevel(ctx(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
			name := fixture.RichTool
			if path == "/mcp" {
				name = "r__" + name
			}
			waitTools(t, cs, "the rich tool", func(n []string) bool { return has(n, name) })

			if out, isErr, _, err := callText(t, cs, name, nil); err != nil || isErr || out != richAnswer {
				t.Fatalf("fast call: %q %v (%v), want %q", out, isErr, err, richAnswer)
			}
			if !h.has(&h.logs, "asking") {
				t.Errorf("the upstream's log message during the call did not reach the client: %v", h.logs)
			}

			res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: name, Meta: mcp.Meta{"progressToken": "p-" + path}})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != richAnswer {
				t.Fatalf("call with a progress token: %+v (%v)", res, err)
			}
			parts.WaitFor(t, 20*time.Second, "progress under the client's token", func() bool { return h.has(&h.progress, "p-"+path+" half way") })
		})
	}
}

// A client that declared neither elicitation nor sampling is not sent
// such requests: the upstream is told, and its error comes back.
func TestClientWithoutCapabilities(t *testing.T) {
	e, _ := richEnv(t)
	cs := e.connect(t, "/mcp", nil, session2025)
	waitTools(t, cs, "the rich tool", func(n []string) bool { return has(n, "r__ask") })
	out, _, _, err := callText(t, cs, "r__ask", nil)
	if err == nil || !strings.Contains(err.Error(), "did not declare the capability elicitation/create needs") {
		t.Fatalf("a call needing elicitation from a client without it: %q (%v); want the upstream's error", out, err)
	}
}

// A log message the upstream sends outside any call goes to the sessions
// that asked for its level, and only to them.
func TestLogOutsideCalls(t *testing.T) {
	e, r := richEnv(t)
	loud, quiet := &heard{}, &heard{}
	csLoud := e.connect(t, "/mcp", answering(loud), session2025)
	csQuiet := e.connect(t, "/mcp/r", answering(quiet), session2025)
	// The upstream is asked for the most verbose level any session set,
	// whatever the order; each session filters for itself.
	if err := csLoud.SetLoggingLevel(ctx(t), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	if err := csQuiet.SetLoggingLevel(ctx(t), &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	logUp := func(level mcp.LoggingLevel, data string) {
		for ss := range r.Server.Sessions() {
			if err := ss.Log(ctx(t), &mcp.LoggingMessageParams{Level: level, Data: data}); err != nil {
				t.Fatal(err)
			}
		}
	}
	logUp("info", "for the loud")
	logUp("critical", "for both")
	parts.WaitFor(t, 20*time.Second, "the messages at their sessions", func() bool {
		return loud.has(&loud.logs, "for the loud") && loud.has(&loud.logs, "for both") && quiet.has(&quiet.logs, "for both")
	})
	if quiet.has(&quiet.logs, "for the loud") {
		t.Error("a session that asked for errors only got an info message")
	}

	// Nor during its own call (the fast path sends on the call's stream).
	if out, isErr, _, err := callText(t, csQuiet, fixture.RichTool, nil); err != nil || isErr || out != "Ada||client-model" {
		t.Fatalf("the quiet session's call: %q %v (%v)", out, isErr, err)
	}
	if quiet.has(&quiet.logs, "asking") {
		t.Error("a session that asked for errors only got a warning during its call")
	}
}
