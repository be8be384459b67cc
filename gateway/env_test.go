package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/answer"
	"github.com/wardenmcp/warden/gateway"
	"github.com/wardenmcp/warden/internal/testing/wardentest/parts"
	"github.com/wardenmcp/warden/question"
)

// The tests of this file's package drive the gateway from outside, as the
// surfaces and the API do, over the real policy parts (package parts) and
// real upstreams (package fixture, or SDK servers of their own).

// start runs the gateway over the servers of a config's mcpServers JSON.
func start(t *testing.T, mcpServers string) *parts.Parts {
	t.Helper()
	p := parts.New(t, slog.New(slog.DiscardHandler))
	p.Start(t, mcpServers)
	return p
}

// testCtx bounds one test's waits on the upstreams.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call runs a tools/call through the gateway from the /mcp surface.
func call(t *testing.T, p *parts.Parts, server, tool, args string, client gateway.Client) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx := testCtx(t)
	c := gateway.Call{Server: server, Tool: tool, Surface: "mcp", Client: client}
	if args != "" {
		c.Args = []byte(args)
	}
	res, err := p.Gateway.CallTool(ctx, c)
	if err != nil {
		return nil, err
	}
	return decoded(t, res), nil
}

func decoded(t *testing.T, res *answer.Result) *mcp.CallToolResult {
	t.Helper()
	r, err := res.Tool()
	if err != nil {
		t.Fatalf("result does not decode: %v", err)
	}
	return r
}

// text is a result's text content.
func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// refusalCode is the code of a refusal answered as a result ("" for none).
func refusalCode(r *mcp.CallToolResult) string {
	m, _ := r.Meta["warden/refusal"].(map[string]any)
	code, _ := m["code"].(string)
	return code
}

// expectRefusal calls and expects a refusal with code whose text holds each
// of want.
func expectRefusal(t *testing.T, p *parts.Parts, server, tool, args string, client gateway.Client, code gateway.Code, want ...string) {
	t.Helper()
	res, err := call(t, p, server, tool, args, client)
	if err != nil {
		t.Fatalf("%s/%s: error %v, want a %s refusal", server, tool, err, code)
	}
	if !res.IsError || refusalCode(res) != string(code) {
		t.Fatalf("%s/%s: %+v %q, want a %s refusal", server, tool, res, text(res), code)
	}
	for _, w := range want {
		if !strings.Contains(text(res), w) {
			t.Errorf("%s/%s refused with %q; want it to say %q", server, tool, text(res), w)
		}
	}
}

// expectUnknownTool expects the invalid-params error of a tool the agent
// may not call.
func expectUnknownTool(t *testing.T, p *parts.Parts, server, tool string) {
	t.Helper()
	res, err := call(t, p, server, tool, "", nil)
	var unknown *gateway.UnknownToolError
	if !errors.As(err, &unknown) || unknown.Server != server || unknown.Tool != tool {
		t.Fatalf("%s/%s: %v (%v), want an UnknownToolError", server, tool, res, err)
	}
}

// lastActivity is the newest activity entry of server.
func lastActivity(t *testing.T, p *parts.Parts, server string) activity.Entry {
	t.Helper()
	p.Activity.Flush()
	entries, err := p.Activity.Query(activity.Filter{Server: server}, 1)
	if err != nil || len(entries) != 1 {
		t.Fatalf("activity of %s: %v (%v)", server, entries, err)
	}
	return entries[0]
}

// toolNames lists server's tools as the gateway serves them.
func toolNames(p *parts.Parts, server string) []string {
	var names []string
	for _, t := range p.Gateway.Tools(server) {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}

// waitTool waits until the gateway serves server's tool and ok accepts it.
func waitTool(t *testing.T, p *parts.Parts, server, tool string, ok func(gateway.Tool) bool) {
	t.Helper()
	parts.WaitFor(t, 20*time.Second, server+"/"+tool+" as awaited", func() bool {
		for _, x := range p.Gateway.Tools(server) {
			if x.Name == tool {
				return ok(x)
			}
		}
		return false
	})
}

// client is a downstream client that answers what the gateway asks it
// with what the test set, and records what it was told.
type client struct {
	caps   *mcp.ClientCapabilities
	elicit func(*mcp.ElicitParams) (*mcp.ElicitResult, error)

	mu       sync.Mutex
	methods  []string // of the questions put to it
	asked    []*mcp.ElicitParams
	progress []*mcp.ProgressNotificationParams
	logs     []*mcp.LoggingMessageParams
}

func (c *client) Capabilities() *mcp.ClientCapabilities { return c.caps }

func (c *client) Ask(ctx context.Context, _ string, q mcp.InputRequest) (mcp.InputResponse, error) {
	c.mu.Lock()
	c.methods = append(c.methods, question.Method(q))
	c.mu.Unlock()
	switch p := q.(type) {
	case *mcp.CreateMessageWithToolsParams:
		return &mcp.CreateMessageWithToolsResult{Model: "test-model", Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil
	case *mcp.ElicitParams:
		c.mu.Lock()
		c.asked = append(c.asked, p)
		c.mu.Unlock()
		return c.elicit(p)
	}
	return &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///root-of-test"}}}, nil
}

func (c *client) Progress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	c.mu.Lock()
	c.progress = append(c.progress, p)
	c.mu.Unlock()
}

func (c *client) Log(ctx context.Context, p *mcp.LoggingMessageParams) {
	c.mu.Lock()
	c.logs = append(c.logs, p)
	c.mu.Unlock()
}

func (c *client) askedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.asked)
}
