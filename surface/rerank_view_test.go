package surface_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/surface"
)

// reranked is a search_tools answer with what it says of its order.
type reranked struct {
	Tools        []found
	Reranked     *bool
	RerankReason string
	Text         string
}

func searchOrdered(t *testing.T, cs *mcp.ClientSession, query string, limit int) reranked {
	t.Helper()
	res, err := cs.CallTool(ctx(t), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query, "limit": limit}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools %q: %+v (%v)", query, res, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out reranked
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	out.Text = res.Content[0].(*mcp.TextContent).Text
	return out
}

func names(tools []found) []string {
	out := make([]string, len(tools))
	for i, f := range tools {
		out[i] = f.Name
	}
	return out
}

// model is a client's sampling handler: it records each prompt and
// answers what answer makes of it.
type model struct {
	mu      sync.Mutex
	prompts []string
	answer  func(ctx context.Context, prompt string) (string, error)
}

func (m *model) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{CreateMessageHandler: func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		prompt := r.Params.Messages[0].Content.(*mcp.TextContent).Text
		m.mu.Lock()
		m.prompts = append(m.prompts, fmt.Sprintf("maxTokens=%d\n%s", r.Params.MaxTokens, prompt))
		m.mu.Unlock()
		text, err := m.answer(ctx, prompt)
		if err != nil {
			return nil, err
		}
		return &mcp.CreateMessageResult{Role: "assistant", Model: "client-model", Content: &mcp.TextContent{Text: text}}, nil
	}}
}

func (m *model) asked() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.prompts)
}

// reverse answers the candidates' numbers last first.
func reverse(_ context.Context, prompt string) (string, error) {
	var nums []string
	for l := range strings.Lines(prompt) {
		if n, _, ok := strings.Cut(l, ". "); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			nums = append([]string{n}, nums...)
		}
	}
	return strings.Join(nums, ", "), nil
}

// With toolSearch's rerank "sampling", search_tools asks a client that
// declared sampling to order the index's best 20, in either era, and
// answers in that order; a client without sampling, one that refuses, one
// whose model answers no number and one whose model does not answer in
// time all get the index's order, told why; with rerank off nobody is
// asked and nothing is said of the order.
func TestRerankBySampling(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{Tools: 25})
	e := newEnv(t, fmt.Sprintf(`{"fx": {"url": %q, "trusted": true}}`, fx.Serve(t)), 0, 0)
	e.WaitListed(t, "fx")
	const query = "generated tool number"

	// The index's order, with rerank off: the generated tools tie, so it
	// is theirs by name.
	plain := e.connect(t, "/mcp?view=search", nil, session2025)
	lexical := searchOrdered(t, plain, query, 50)
	if len(lexical.Tools) != 25 || lexical.Reranked != nil || strings.Contains(lexical.Text, "order") {
		t.Fatalf("with rerank off: %d tools, reranked %v, %q", len(lexical.Tools), lexical.Reranked, lexical.Text)
	}
	index := names(lexical.Tools)

	e.S.SetToolSearch(surface.ToolSearch{Mode: config.ToolSearchOff, Rerank: config.RerankSampling})
	for _, era := range []struct {
		name string
		so   *mcp.ClientSessionOptions
	}{{"2025", session2025}, {"2026-07-28", nil}} {
		t.Run(era.name, func(t *testing.T) {
			m := &model{answer: reverse}
			cs := e.connect(t, "/mcp?view=search", m.options(), era.so)
			// The best 20, last first, then the rest as the index has them;
			// a limit takes the first of that.
			want := append(slices.Clone(index[:20]), index[20:]...)
			slices.Reverse(want[:20])
			got := searchOrdered(t, cs, query, 25)
			if !slices.Equal(names(got.Tools), want) || got.Reranked == nil || !*got.Reranked || got.RerankReason != "" ||
				!strings.Contains(got.Text, "ordered by your model") {
				t.Errorf("reranked by a reversing model: %v %v %q %q, want %v", names(got.Tools), got.Reranked, got.RerankReason, got.Text, want)
			}
			if got := searchOrdered(t, cs, query, 3); !slices.Equal(names(got.Tools), want[:3]) {
				t.Errorf("limit 3: %v, want %v", names(got.Tools), want[:3])
			}
			prompts := m.asked()
			if len(prompts) != 2 {
				t.Fatalf("the model was asked %d times, want once a search", len(prompts))
			}
			p := prompts[0]
			if !strings.HasPrefix(p, "maxTokens=100\n") || !strings.Contains(p, "Query: "+query+"\n") ||
				!strings.Contains(p, "\n1. "+index[0]+": Generated tool number") || !strings.Contains(p, "\n20. "+index[19]+": ") ||
				strings.Contains(p, "\n21. ") || strings.Contains(p, "inputSchema") {
				t.Errorf("the prompt:\n%s", p)
			}
		})
	}

	// reasons are what the reason says, in order (the SDK may name its
	// method between them).
	fallback := func(t *testing.T, opts *mcp.ClientOptions, so *mcp.ClientSessionOptions, reasons ...string) {
		t.Helper()
		cs := e.connect(t, "/mcp?view=search", opts, so)
		got := searchOrdered(t, cs, query, 25)
		if !slices.Equal(names(got.Tools), index) || got.Reranked == nil || *got.Reranked || !inOrder(got.RerankReason, reasons) ||
			!strings.Contains(got.Text, "in the index's order, not your model's: "+got.RerankReason) {
			t.Errorf("%v %v %q %q; want the index's order, reranked false, for %q", names(got.Tools), got.Reranked, got.RerankReason, got.Text, reasons)
		}
	}
	for _, era := range []*mcp.ClientSessionOptions{session2025, nil} {
		fallback(t, nil, era, "the client did not declare sampling")
	}
	garbage := &model{answer: func(context.Context, string) (string, error) { return "I would rather not say.", nil }}
	fallback(t, garbage.options(), session2025, "the client's model answered no candidate's number")
	refusing := &model{answer: func(context.Context, string) (string, error) { return "", errors.New("the user declined") }}
	fallback(t, refusing.options(), session2025, "the client did not answer the sampling request: ", "the user declined")

	surface.SetRerankWait(t, 200*time.Millisecond)
	// The silent model waits for Warden's cancellation, or for release:
	// the cancellation is best-effort (the SDK may send it on the call's
	// stream as it closes), and closing the session waits for the handler.
	release := make(chan struct{})
	defer close(release)
	silent := &model{answer: func(ctx context.Context, _ string) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-release:
			return "", errors.New("the test is over")
		}
	}}
	fallback(t, silent.options(), session2025, "the client's model did not answer within 200ms")
}

// inOrder reports whether s holds each of parts, one after another.
func inOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}
