package wardentest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/client"
)

// callTimeout bounds one tool call of a test, so a hung call fails the test
// instead of hanging the suite.
const callTimeout = 30 * time.Second

// CallResult calls tool name with args and returns its result, error
// results included; only a failed call (no result) fails the test.
func CallResult(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// ResultText joins the text contents of a result (empty for nil).
func ResultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// CallText calls tool name with args and returns its text; an error result
// fails the test.
func CallText(t testing.TB, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res := CallResult(t, cs, name, args)
	if res.IsError {
		t.Fatalf("call %s: error result: %s", name, ResultText(res))
	}
	return ResultText(res)
}

// TryCall calls a tool and returns its text, or the error as text
// ("error: …", "error result: …"); it never fails the test, so it may run
// off the test goroutine.
func TryCall(cs *mcp.ClientSession, name string, args any) string {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "error: " + err.Error()
	}
	if res.IsError {
		return "error result: " + ResultText(res)
	}
	return ResultText(res)
}

// ToolNames lists a session's tool names in the order listed.
func ToolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// SortedToolNames lists a session's tool names, sorted.
func SortedToolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	names := ToolNames(t, cs)
	slices.Sort(names)
	return names
}

// WantRefusal fails the test unless res is Warden's refusal with code
// (its _meta) and its text contains each of texts.
func WantRefusal(t testing.TB, res *mcp.CallToolResult, code string, texts ...string) {
	t.Helper()
	text := ResultText(res)
	if !res.IsError || client.Refusal(res) != code {
		t.Fatalf("want a %s refusal, got isError=%v code=%q _meta=%v %q", code, res.IsError, client.Refusal(res), res.Meta, text)
	}
	for _, s := range texts {
		if !strings.Contains(text, s) {
			t.Fatalf("refusal text %q does not contain %q", text, s)
		}
	}
}
