package e2e

// End-to-end tests of the search view, /mcp?view=search: two tools listed,
// only callable tools found, call_tool on the direct call's path, and the
// index following approvals, blocks and list changes without a restart.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

type stFound struct {
	Tools []struct {
		Name, Server, Tool, Description string
		InputSchema                     map[string]any
		Score                           float64
	}
}

// stSearch runs search_tools and returns the names found, best first.
func stSearch(t *testing.T, cs *mcp.ClientSession, query string) []string {
	t.Helper()
	res := wardentest.CallResult(t, cs, "search_tools", map[string]any{"query": query, "limit": 50})
	if res.IsError {
		t.Fatalf("search_tools %q: %s", query, wardentest.ResultText(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var f stFound
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("search_tools %q: structuredContent %s: %v", query, b, err)
	}
	var names []string
	for _, tool := range f.Tools {
		if tool.Name != tool.Server+"__"+tool.Tool || tool.InputSchema == nil || tool.Score <= 0 {
			t.Fatalf("search_tools %q: a found tool lacks its fields: %s", query, b)
		}
		names = append(names, tool.Name)
	}
	return names
}

func stWaitFound(t *testing.T, cs *mcp.ClientSession, query, name string, want bool) {
	t.Helper()
	wardentest.WaitFor(t, 20*time.Second, "search for "+query+" to settle", func() bool {
		return slices.Contains(stSearch(t, cs, query), name) == want
	})
}

func TestSearchView(t *testing.T) {
	f := fixture.NewServer(fixture.Options{Instructions: "Keeps the spaceship registry."})
	q := fixture.NewServer(fixture.Options{}) // untrusted: quarantined
	w := wardentest.Start(t, map[string]any{
		"s": map[string]any{"url": f.Serve(t), "trusted": true,
			"tools": map[string]any{fixture.ToolDelete: map[string]any{"hidden": true}}},
		"q": map[string]any{"url": q.Serve(t)},
	})
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", w.Logs)
		}
	}()
	w.WaitReady(t, "s")
	w.WaitReady(t, "q")
	apWaitTool(t, w, "s", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))
	// A new tool is pending, a changed one is held.
	f.AddTool(&mcp.Tool{Name: "launch_rocket", Description: "Launch the rocket into orbit."})
	if err := f.SetDescription(fixture.ToolWrite, "Store a value; also launch the rocket."); err != nil {
		t.Fatal(err)
	}
	apWaitTool(t, w, "s", "launch_rocket", "pending", apStatusIs(approval.StatusPending))
	apWaitTool(t, w, "s", fixture.ToolWrite, "changed", apStatusIs(approval.StatusChanged))

	// What each view costs: the visible tools' definitions against the
	// search view's two.
	var st api.Status
	w.API(t, "GET", "/v1/status", nil, &st)
	var fromServers int
	for _, s := range st.Servers {
		fromServers += s.ToolTokens
	}
	if all, search := st.ViewTokens["all"], st.ViewTokens["search"]; all <= 0 || search <= 0 || all != fromServers {
		t.Errorf("view_tokens %v, servers' tool_tokens add up to %d", st.ViewTokens, fromServers)
	}
	if code, out, _ := w.CLI(t, "status"); code != 0 || !strings.Contains(out, "tokens on /mcp") {
		t.Errorf("warden status: exit %d\n%s", code, out)
	}

	cs := w.Connect(t, "/mcp?view=search", nil)
	defer cs.Close()
	if got := wardentest.SortedToolNames(t, cs); !slices.Equal(got, []string{"call_tool", "search_tools"}) {
		t.Fatalf("/mcp?view=search lists %v, want call_tool and search_tools", got)
	}
	stWaitFound(t, cs, "echo back text", "s__echo", true)
	// The server's instructions are context for its tools.
	if got := stSearch(t, cs, "spaceship"); len(got) == 0 || !strings.HasPrefix(got[0], "s__") {
		t.Errorf("search by the server's instructions found %v", got)
	}

	// The text form names each tool with its parameters; limit bounds the
	// answer; a search without a query is told what to send.
	res0 := wardentest.CallResult(t, cs, "search_tools", map[string]any{"query": "echo back text", "limit": 1})
	if text := wardentest.ResultText(res0); !strings.HasPrefix(text, "s__echo(") || strings.Count(text, "\n") != 2 {
		t.Errorf("search_tools text form, limit 1: %q", text)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), `"query"`) {
		t.Errorf("search_tools without a query: %v", err)
	}

	// Whatever is asked, only callable tools are found.
	callable := []string{"s__" + fixture.ToolEcho, "s__" + fixture.ToolRead}
	for _, query := range []string{"value", "launch the rocket", "delete remove value", "write store value", "echo read write delete value rocket", "q"} {
		for _, name := range stSearch(t, cs, query) {
			if !slices.Contains(callable, name) {
				t.Errorf("search %q found %s, which no agent may call", query, name)
			}
		}
	}

	// A found tool is callable through call_tool, reaching the upstream.
	before := f.Calls(fixture.ToolEcho)
	res := wardentest.CallResult(t, cs, "call_tool", map[string]any{"name": "s__echo", "arguments": map[string]any{"text": "hi"}})
	if res.IsError || f.Calls(fixture.ToolEcho) != before+1 {
		t.Fatalf("call_tool s__echo: isError=%v %q, upstream calls %d→%d", res.IsError, wardentest.ResultText(res), before, f.Calls(fixture.ToolEcho))
	}

	// Refusals through call_tool are those of a direct call, word for word.
	agg := w.Connect(t, "/mcp", nil)
	defer agg.Close()
	for name, code := range map[string]string{"s__launch_rocket": "TOOL_PENDING", "s__" + fixture.ToolWrite: "TOOL_CHANGED", "q__echo": "SERVER_QUARANTINED"} {
		args := map[string]any{"key": "k", "value": "v"}
		direct := wardentest.CallResult(t, agg, name, args)
		via := wardentest.CallResult(t, cs, "call_tool", map[string]any{"name": name, "arguments": args})
		if client.Refusal(via) != code || client.Refusal(direct) != code || wardentest.ResultText(via) != wardentest.ResultText(direct) {
			t.Errorf("%s: direct %q %q, via call_tool %q %q; want the same %s refusal", name,
				client.Refusal(direct), wardentest.ResultText(direct), client.Refusal(via), wardentest.ResultText(via), code)
		}
	}

	// Each call left the same activity entry, whichever way it came, but
	// for the endpoint it came on.
	wardentest.WaitFor(t, 20*time.Second, "the activity of the refused calls", func() bool {
		var entries []activity.Entry
		w.API(t, "GET", "/v1/activity?server=s", nil, &entries)
		var pending []activity.Entry
		surfaces := map[string]bool{}
		for _, e := range entries {
			if e.Tool == "launch_rocket" {
				surfaces[e.Surface] = true
				e.At, e.LatencyMicros, e.Args, e.Surface = time.Time{}, 0, nil, ""
				pending = append(pending, e)
			}
		}
		if len(pending) < 2 {
			return false
		}
		if !reflect.DeepEqual(pending[0], pending[1]) || !surfaces["mcp"] || !surfaces["mcp?view=search"] || pending[0].Code != "TOOL_PENDING" {
			t.Fatalf("activity of a direct call and of call_tool differ: %+v on %v", pending, surfaces)
		}
		return true
	})

	// An approval makes a tool findable, a block removes it, no restart.
	w.API(t, "POST", "/v1/servers/s/tools/approve", map[string]any{"tools": []string{"launch_rocket"}}, nil)
	stWaitFound(t, cs, "launch the rocket", "s__launch_rocket", true)
	if res := wardentest.CallResult(t, cs, "call_tool", map[string]any{"name": "s__launch_rocket", "arguments": map[string]any{}}); res.IsError {
		t.Fatalf("call_tool of an approved tool: %s", wardentest.ResultText(res))
	}
	w.API(t, "POST", "/v1/servers/s/tools/block", map[string]any{"tools": []string{fixture.ToolEcho}}, nil)
	stWaitFound(t, cs, "echo back text", "s__echo", false)
	// A tool gone from the server's list is gone from the index.
	f.RemoveTools("launch_rocket")
	stWaitFound(t, cs, "launch the rocket", "s__launch_rocket", false)
}

// "toolSearch": "on" makes the search view /mcp's default, "auto" does once
// the listed definitions cost more than toolSearchBudget tokens; ?view=all
// still lists every tool.
func TestSearchViewDefault(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		budget int
		search bool
	}{{"on", 10000, true}, {"auto", 1, true}, {"auto", 1000000, false}, {"off", 1, false}} {
		t.Run(fmt.Sprintf("%s-%d", tc.mode, tc.budget), func(t *testing.T) {
			f := fixture.NewServer(fixture.Options{})
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.json")
			b, _ := json.Marshal(map[string]any{"toolSearch": tc.mode, "toolSearchBudget": tc.budget,
				"mcpServers": map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}}})
			if err := os.WriteFile(cfg, b, 0o600); err != nil {
				t.Fatal(err)
			}
			w := wardentest.StartWith(t, cfg, filepath.Join(dir, "state"))
			w.WaitReady(t, "s")
			apWaitTool(t, w, "s", fixture.ToolEcho, "baselined", apStatusIs(approval.StatusApproved))
			all := w.Connect(t, "/mcp?view=all", nil)
			defer all.Close()
			wardentest.WaitFor(t, 20*time.Second, "every tool on /mcp?view=all", func() bool {
				return slices.Contains(wardentest.SortedToolNames(t, all), "s__echo")
			})
			def := w.Connect(t, "/mcp", nil)
			defer def.Close()
			got := wardentest.SortedToolNames(t, def)
			if isSearch := slices.Equal(got, []string{"call_tool", "search_tools"}); isSearch != tc.search {
				t.Fatalf("/mcp lists %v; want the search view: %v", got, tc.search)
			}
			if tc.search {
				stWaitFound(t, def, "echo", "s__echo", true)
			}
		})
	}
}

// "toolSearch": {"mode": "on", "rerank": "sampling"}: search_tools on /mcp
// is ordered by the model of a client that offers one (here, one that
// answers the candidates last first), and left in the index's order, told
// why, for a client that does not; a reload to "none" stops the asking.
func TestSearchRerankConfig(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	write := func(rerank string) {
		b, _ := json.Marshal(map[string]any{"toolSearch": map[string]any{"mode": "on", "rerank": rerank},
			"mcpServers": map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}}})
		wardentest.WriteFileAtomic(t, cfg, b, 0o600)
	}
	write("sampling")
	w := wardentest.StartWith(t, cfg, filepath.Join(dir, "state"))
	w.WaitReady(t, "s")
	search := func(cs *mcp.ClientSession) (names []string, reranked any) {
		res := wardentest.CallResult(t, cs, "search_tools", map[string]any{"query": "the value of a key"})
		m, _ := res.StructuredContent.(map[string]any)
		for _, tool := range m["tools"].([]any) {
			names = append(names, tool.(map[string]any)["name"].(string))
		}
		return names, m["reranked"]
	}

	plain := w.Connect(t, "/mcp", nil)
	stWaitFound(t, plain, "the value of a key", "s__delete_value", true)
	index, reranked := search(plain)
	if len(index) < 3 || reranked != false {
		t.Fatalf("a client without sampling: %v, reranked %v; want the index's order, reranked false", index, reranked)
	}
	var asked atomic.Int32
	sampling := w.Connect(t, "/mcp", &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		asked.Add(1)
		nums := make([]string, len(index))
		for i := range nums {
			nums[i] = fmt.Sprint(len(index) - i)
		}
		return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: strings.Join(nums, ",")}}, nil
	}})
	want := slices.Clone(index)
	slices.Reverse(want)
	if got, reranked := search(sampling); !slices.Equal(got, want) || reranked != true || asked.Load() != 1 {
		t.Errorf("a client with sampling: %v, reranked %v, asked %d times; want %v, reranked, asked once", got, reranked, asked.Load(), want)
	}

	n := w.Reloads()
	write("none")
	wardentest.WaitFor(t, 20*time.Second, "the config reload", func() bool { return w.Reloads() > n })
	if got, reranked := search(sampling); !slices.Equal(got, index) || reranked != nil || asked.Load() != 1 {
		t.Errorf("after the reload to none: %v, reranked %v, asked %d times; want the index's order, nothing said, not asked", got, reranked, asked.Load())
	}
}
