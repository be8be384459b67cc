package upstream

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/testing/fixture"
)

// listed is the inventory of an HTTP upstream at url, once listed.
func listed(t *testing.T, url string) *Inventory {
	t.Helper()
	peer := inventoryPeer{got: make(chan *Inventory, 4)}
	c := Start(&config.Server{Name: "up", URL: url, Transport: config.TransportHTTP, CallTimeout: 10 * time.Second}, Options{Peer: peer})
	t.Cleanup(c.Stop)
	if err := c.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case inv := <-peer.got:
		return inv
	case <-time.After(10 * time.Second):
		t.Fatal("no listing")
	}
	return nil
}

// taskSupport is what a listed tool's MetaExecution says.
func taskSupport(inv *Inventory, tool string) any {
	t := inv.Tool(tool)
	if t == nil {
		return "not listed"
	}
	ex, ok := t.Meta[MetaExecution].(map[string]any)
	if !ok {
		return t.Meta[MetaExecution]
	}
	return ex["taskSupport"]
}

// A listing keeps each tool's execution, which the SDK's Tool drops, in
// its _meta, from an answer in JSON and from one on an event stream; an
// upstream's own value under that key is dropped.
func TestListingKeepsExecution(t *testing.T) {
	inv := listed(t, toolsUpstream(t, "2025-11-25", `[
		{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},
		{"name":"b","inputSchema":{"type":"object"},"_meta":{"warden/execution":{"taskSupport":"optional"},"other":1}},
		{"name":"c","inputSchema":{"type":"object"}}]`, nil).URL)
	if got := taskSupport(inv, "a"); got != "required" {
		t.Errorf("a: %v, want required", got)
	}
	if got := taskSupport(inv, "b"); got != nil || inv.Tool("b").Meta["other"] != float64(1) {
		t.Errorf("b: %v, meta %v; want no execution, its other _meta kept", got, inv.Tool("b").Meta)
	}
	if got := inv.Tool("c").Meta; got != nil {
		t.Errorf("c: meta %v, want none", got)
	}

	// The SDK's server answers on an event stream.
	inv = listed(t, fixture.NewServer(fixture.Options{Tasks: true}).Serve(t))
	for tool, want := range map[string]any{fixture.ToolGreet: fixture.TaskForbidden, fixture.ToolSlowCompute: fixture.TaskOptional, fixture.ToolWithTask: fixture.TaskRequired} {
		if got := taskSupport(inv, tool); got != want {
			t.Errorf("%s: %v, want %v", tool, got, want)
		}
	}
}

// An event stream's events are read once whole, however the stream is
// cut: data over several lines, events of other kinds, CRLF line ends.
func TestTapBodyEventStream(t *testing.T) {
	stream := "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\r\n\r\n" +
		"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[\ndata: {\"name\":\"x\",\"execution\":{\"taskSupport\":\"optional\"}}]}}\n\n"
	tap := &listTap{}
	b := &tapBody{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(stream))), tap: tap, sse: true}
	if _, err := io.ReadAll(b); err != nil {
		t.Fatal(err)
	}
	if got := string(tap.exec["x"]); got != `{"taskSupport":"optional"}` {
		t.Errorf("x: %q", got)
	}
}

// Over stdio, the answer to a tools/list sent with a tap feeds it; other
// answers do not.
func TestTapIDs(t *testing.T) {
	tap := &listTap{}
	ids := &tapIDs{}
	one, _ := jsonrpc.MakeID(float64(1))
	two, _ := jsonrpc.MakeID(float64(2))
	list := &jsonrpc.Request{ID: one, Method: "tools/list"}
	other := &jsonrpc.Request{ID: two, Method: "prompts/list"}
	ids.sent(withListTap(context.Background(), tap), list)
	ids.sent(withListTap(context.Background(), tap), other)
	ids.received(&jsonrpc.Response{ID: two, Result: []byte(`{"tools":[{"name":"y","execution":{"taskSupport":"required"}}]}`)})
	ids.received(&jsonrpc.Response{ID: one, Result: []byte(`{"tools":[{"name":"x","execution":{"taskSupport":"optional"}}]}`)})
	tools := []*mcp.Tool{{Name: "x"}, {Name: "y"}}
	tap.apply(tools)
	if ex, _ := tools[0].Meta[MetaExecution].(map[string]any); ex["taskSupport"] != "optional" || tools[1].Meta != nil {
		t.Errorf("x %v, y %v; want x optional, y nothing", tools[0].Meta, tools[1].Meta)
	}
}
