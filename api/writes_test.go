package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/writes"
)

// argSecret is in a call's arguments: answers show only their hash.
const argSecret = "call-arg-secret-51d0"

// callEnv is one trusted server w whose calls time out after 200ms, with
// tools "fails" and "strict" that answer JSON-RPC errors (internal, invalid
// params), and a quarantined server q.
func callEnv(t *testing.T) *env {
	t.Helper()
	w := fixture.NewServer(fixture.Options{})
	for name, code := range map[string]int64{"fails": jsonrpc.CodeInternalError, "strict": jsonrpc.CodeInvalidParams} {
		w.Server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: fixture.ClassAnnotations("read")},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, &jsonrpc.Error{Code: code, Message: name + ": the fixture refuses"}
			})
	}
	q := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"w": {"url": %q, "trusted": true, "callTimeout": "200ms"}, "q": {"url": %q}}`, w.Serve(t), q.Serve(t)))
	e.WaitListed(t, "w")
	e.WaitListed(t, "q")
	return e
}

// callResult is a POST /v1/servers/{s}/call answer.
type callResult struct {
	Content []struct{ Text string }
	IsError bool `json:"isError"`
	Meta    struct {
		Refusal struct{ Code string } `json:"warden/refusal"`
	} `json:"_meta"`
}

func (c callResult) text() string {
	var b strings.Builder
	for _, p := range c.Content {
		b.WriteString(p.Text)
	}
	return b.String()
}

// call posts body to server's call route and expects a 200 result.
func (e *env) call(server, body string) callResult {
	e.t.Helper()
	var res callResult
	rec := e.do("POST", "/v1/servers/"+server+"/call", body)
	decodeInto(e.t, rec, &res)
	if rec.Code != http.StatusOK {
		e.t.Fatalf("POST /v1/servers/%s/call %s: %d %s", server, body, rec.Code, rec.Body)
	}
	return res
}

func TestCall(t *testing.T) {
	e := callEnv(t)
	if res := e.call("w", `{"tool": "echo", "arguments": {"said": "hello"}}`); res.IsError || !strings.Contains(res.text(), "hello") {
		t.Errorf("echo: %+v", res)
	}
	if res := e.call("w", `{"tool": "read_value", "arguments": null}`); res.IsError {
		t.Errorf("read_value with null arguments: %+v", res)
	}
	res := e.call("q", `{"tool": "echo"}`)
	if !res.IsError || res.Meta.Refusal.Code != "SERVER_QUARANTINED" || !strings.Contains(res.text(), "warden servers approve q") {
		t.Errorf("a call to a quarantined server: %+v; want a SERVER_QUARANTINED refusal naming warden servers approve q", res)
	}

	tests := []struct {
		name, server, body string
		want               refusal
	}{
		{"no tool", "w", `{"arguments": {}}`, refusal{http.StatusBadRequest, "bad_request", []string{`"tool" is missing`, "warden tools w"}}},
		{"arguments not an object", "w", `{"tool": "echo", "arguments": [1]}`, refusal{http.StatusBadRequest, "bad_request", []string{`"arguments" must be a JSON object`}}},
		{"malformed JSON", "w", `{"tool": "echo"`, refusal{http.StatusBadRequest, "bad_request", []string{"request body", "GET /v1/openapi.json"}}},
		{"unknown tool", "w", `{"tool": "nosuch"}`, refusal{http.StatusNotFound, "unknown_tool", []string{`"nosuch"`, "nothing was sent", "warden tools w"}}},
		{"arguments the tool does not take", "w", `{"tool": "strict", "arguments": {"x": 5}}`, refusal{http.StatusBadRequest, "invalid_params", []string{"strict: the fixture refuses"}}},
		{"upstream's own error", "w", `{"tool": "fails"}`, refusal{http.StatusBadGateway, "upstream_error", []string{"fails: the fixture refuses"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectError(t, e.do("POST", "/v1/servers/"+tt.server+"/call", tt.body), tt.want)
		})
	}
}

// A tool whose config says recordArgs has its arguments' values in its
// latch, each cut to writes.MaxArgValue bytes; another server's are not.
func TestWritesLatchRecordsValues(t *testing.T) {
	w := fixture.NewServer(fixture.Options{})
	e := newEnv(t, fmt.Sprintf(`{"w": {"url": %q, "trusted": true, "callTimeout": "200ms", "tools": {%q: {"recordArgs": true}}}}`, w.Serve(t), fixture.ToolWrite))
	e.WaitListed(t, "w")
	long := strings.Repeat("x", 2000)
	if res := e.call("w", fmt.Sprintf(`{"tool": "write_value", "arguments": {"key": "k1", "value": %q, "sleep_ms": 10000}}`, long)); !res.IsError {
		t.Fatalf("a write that timed out answered %+v", res)
	}
	var latches []writes.Latch
	decodeInto(t, e.do("GET", "/v1/writes", ""), &latches)
	want := []writes.Arg{
		{Name: "key", Bytes: 4, Value: `"k1"`},
		{Name: "sleep_ms", Bytes: 5, Value: "10000"},
		{Name: "value", Bytes: 2002, Value: `"` + long[:writes.MaxArgValue-1], ValueCut: true},
	}
	if len(latches) != 1 || !reflect.DeepEqual(latches[0].Args, want) {
		t.Errorf("latches %+v; want the arguments %+v", latches, want)
	}
}

// A write that times out latches the server: GET /v1/writes shows it
// (the arguments' hash, never the arguments), further writes are refused
// with the command that clears it, and DELETE clears it.
func TestWritesLatch(t *testing.T) {
	e := callEnv(t)
	rec := e.do("GET", "/v1/writes", "")
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Fatalf("GET /v1/writes with no latch: %d %s; want 200 []", rec.Code, rec.Body)
	}
	res := e.call("w", fmt.Sprintf(`{"tool": "write_value", "arguments": {"value": %q, "sleep_ms": 10000}}`, argSecret))
	if !res.IsError {
		t.Fatalf("a write that timed out answered %+v", res)
	}

	var latches []writes.Latch
	rec = e.do("GET", "/v1/writes", "")
	decodeInto(t, rec, &latches)
	if len(latches) != 1 {
		t.Fatalf("GET /v1/writes after a timed-out write: %s", rec.Body)
	}
	l := latches[0]
	if l.Server != "w" || l.Tool != fixture.ToolWrite || l.Reason != writes.ReasonTimeout || l.Surface != "cli" || l.At.IsZero() ||
		!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(l.ArgsSHA256) {
		t.Errorf("latch %+v", l)
	}
	// What finds the call upstream: when it was sent, its arguments' names
	// and sizes (not their values: the config does not ask for them).
	wantArgs := []writes.Arg{{Name: "sleep_ms", Bytes: len("10000")}, {Name: "value", Bytes: len(argSecret) + 2}}
	if l.SentAt.IsZero() || !l.SentAt.Before(l.At) || !reflect.DeepEqual(l.Args, wantArgs) || l.Client != (writes.Caller{User: "local"}) {
		t.Errorf("latch %+v; want sent before it latched, arguments %+v and the local operator as its caller (an operator's call)", l, wantArgs)
	}
	if strings.Contains(rec.Body.String(), argSecret) {
		t.Errorf("GET /v1/writes shows the call's arguments: %s", rec.Body)
	}

	res = e.call("w", `{"tool": "write_value", "arguments": {"value": "again"}}`)
	if res.Meta.Refusal.Code != "WRITES_LATCHED" || !strings.Contains(res.text(), "warden writes clear w") {
		t.Errorf("a write while latched: %+v; want WRITES_LATCHED naming warden writes clear w", res)
	}
	if res := e.call("w", `{"tool": "read_value"}`); res.IsError {
		t.Errorf("a read while latched was refused: %+v", res)
	}

	// The latch outlives the server's config entry: it can still be cleared.
	delete(e.cfg.Servers, "w")
	var cleared struct {
		Cleared bool
		Latch   writes.Latch
		Latches []writes.Latch
	}
	rec = e.do("DELETE", "/v1/writes/w", "")
	decodeInto(t, rec, &cleared)
	if rec.Code != http.StatusOK || !cleared.Cleared || len(cleared.Latches) != 1 || !reflect.DeepEqual(cleared.Latch, l) || !reflect.DeepEqual(cleared.Latches, []writes.Latch{l}) {
		t.Fatalf("DELETE /v1/writes/w: %d %s; want the latch %+v cleared", rec.Code, rec.Body, l)
	}
	if _, latched := e.Writes.Check("w"); latched {
		t.Fatal("DELETE answered cleared, the ledger still latches w")
	}
	// Nothing left, and no such server any more: the name is a typo.
	expectError(t, e.do("DELETE", "/v1/writes/w", ""), refusal{http.StatusNotFound, "unknown_server", []string{"warden servers add"}})
	// A configured server with nothing latched: nothing cleared.
	rec = e.do("DELETE", "/v1/writes/q", "")
	var none map[string]any
	decodeInto(t, rec, &none)
	if b, _ := json.Marshal(none); rec.Code != http.StatusOK || string(b) != `{"cleared":false}` {
		t.Fatalf("DELETE /v1/writes/q with nothing latched: %d %s", rec.Code, rec.Body)
	}
}
