package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A client of one era calls through Warden to an upstream of the other,
// and the upstream's questions reach it: a 2026-07-28 client (stateless,
// answering input-required results) through the npm server-everything over
// stdio (a 2025 session, sending sampling and elicitation requests), and a
// 2025-11-25 client (a session, answering requests) through the Go SDK's
// fixture in its stateless mode (asking with input-required results).
func TestErasTranslate(t *testing.T) {
	w := wardentest.Start(t, map[string]any{
		"npm": map[string]any{"command": testenv.Node22(t), "args": []string{testenv.NPMBin(t, "server-everything")}, "trusted": true},
		"sl":  map[string]any{"url": testenv.StartStatelessEverythingServer(t), "trusted": true},
	})
	w.WaitReady(t, "npm")
	w.WaitReady(t, "sl")

	connect := func(t *testing.T, endpoint, version string, asked *[]string) *mcp.ClientSession {
		c := mcp.NewClient(&mcp.Implementation{Name: "eras", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				*asked = append(*asked, "elicitation")
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "check": true, "firstLine": "x", "integer": 1, "number": 1.5, "enum": "value1"}}, nil
			},
			CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				*asked = append(*asked, "sampling")
				return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris, from the client"}}, nil
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.URL(endpoint)}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Fatalf("connected at %s, want %s", got, version)
		}
		return cs
	}
	call := func(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if res.IsError {
			t.Fatalf("%s: %s", tool, wardentest.ResultText(res))
		}
		return wardentest.ResultText(res)
	}

	t.Run("2026 client, 2025 upstream", func(t *testing.T) {
		var asked []string
		cs := connect(t, "/mcp/npm", "2026-07-28", &asked)
		if got := call(t, cs, "trigger-sampling-request", map[string]any{"prompt": "capital of France?"}); !strings.Contains(got, "Paris, from the client") {
			t.Errorf("sampling: the upstream got no answer of the client's: %q", got)
		}
		if got := call(t, cs, "trigger-elicitation-request", nil); !strings.Contains(got, "Ada") {
			t.Errorf("elicitation: the upstream got no answer of the client's: %q", got)
		}
		if strings.Join(asked, ",") != "sampling,elicitation" {
			t.Errorf("the client was asked %v, want sampling then elicitation", asked)
		}
	})

	t.Run("2025 client, 2026 upstream", func(t *testing.T) {
		var asked []string
		cs := connect(t, "/mcp/sl", "2025-11-25", &asked)
		if got := call(t, cs, "test_input_required_result_sampling", nil); !strings.Contains(got, "Paris, from the client") {
			t.Errorf("sampling: the upstream got no answer of the client's: %q", got)
		}
		if got := call(t, cs, "test_input_required_result_elicitation", nil); !strings.Contains(got, "Hello, Ada!") {
			t.Errorf("elicitation: the upstream got no answer of the client's: %q", got)
		}
		if strings.Join(asked, ",") != "sampling,elicitation" {
			t.Errorf("the client was asked %v, want sampling then elicitation", asked)
		}
	})
}
