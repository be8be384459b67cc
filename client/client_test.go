package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
)

func serve(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			reply(w, 401, api.Error{Error: api.ErrorBody{Code: "unauthorized", Message: "bad token"}})
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return New(srv.URL+"/", "tok")
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = New("http://"+addr, "tok").Status(context.Background())
	var ce *ConnError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %T %v, want *ConnError", err, err)
	}
	want := `cannot reach warden at http://` + addr + ` (is the daemon running?)`
	if err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

func TestAPIErrors(t *testing.T) {
	mm := &approval.HashMismatchError{Server: "s", Mismatches: []approval.Mismatch{{Tool: "t", Expected: "sha256:1", Current: "sha256:2"}}}
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/servers/s/tools/approve":
			reply(w, 409, api.Error{Error: api.ErrorBody{Code: "hash_mismatch", Message: mm.Error(), Details: mm}})
		case "/v1/servers/nope":
			reply(w, 404, api.Error{Error: api.ErrorBody{Code: "unknown_server", Message: `no server "nope"`}})
		default:
			w.WriteHeader(502)
			io.WriteString(w, "<html>bad gateway</html>")
		}
	})
	ctx := context.Background()

	_, err := c.ApproveTools(ctx, "s", approval.ToolApproval{Tools: []string{"t"}, ExpectedHashes: map[string]string{"t": "sha256:1"}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 409 || ae.Code != "hash_mismatch" || ae.Message != mm.Error() {
		t.Fatalf("409: %#v", err)
	}
	if got := ae.Mismatches(); len(got) != 1 || got[0] != mm.Mismatches[0] {
		t.Errorf("Mismatches() = %+v", got)
	}

	_, err = c.Server(ctx, "nope")
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "unknown_server" || err.Error() != `no server "nope"` {
		t.Errorf("404: %#v", err)
	}

	_, err = c.Writes(ctx)
	if !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "http_502" || !strings.Contains(err.Error(), "bad gateway") {
		t.Errorf("502: %#v", err)
	}

	_, err = New(c.Where(), "wrong").Status(ctx)
	if !errors.As(err, &ae) || ae.Code != "unauthorized" {
		t.Errorf("401: %#v", err)
	}
}

func TestRequests(t *testing.T) {
	type seen struct {
		method, path, query string
		body                map[string]any
	}
	var got []seen
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, path: r.URL.EscapedPath(), query: r.URL.RawQuery}
		_ = json.NewDecoder(r.Body).Decode(&s.body)
		got = append(got, s)
		switch {
		case strings.HasSuffix(r.URL.Path, "/call"):
			reply(w, 200, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "pending"}},
				Meta: mcp.Meta{"warden/refusal": map[string]any{"code": "TOOL_PENDING"}}})
		case r.URL.Path == "/v1/sessions":
			io.WriteString(w, `[{"server":"r"}]`)
		case r.URL.Path == "/v1/activity" || r.URL.Path == "/v1/writes":
			io.WriteString(w, `[]`)
		case strings.HasPrefix(r.URL.Path, "/v1/writes/"):
			io.WriteString(w, `{"cleared":true,"latch":{"server":"a b","tool":"t","reason":"timeout"}}`)
		default:
			reply(w, 200, approval.Answer{ApprovedCount: 1})
		}
	})
	ctx := context.Background()
	if _, err := c.ApproveServer(ctx, "s", approval.ServerApproval{ExpectedHashes: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ApproveTools(ctx, "s", approval.ToolApproval{All: true, Except: []string{"x"}, ExpectedHashes: map[string]string{"a": "h"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BlockTools(ctx, "s", []string{"b"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Call(ctx, "s", "t", json.RawMessage(`{"k":1}`))
	if err != nil || Refusal(res) != "TOOL_PENDING" || res.Content[0].(*mcp.TextContent).Text != "pending" {
		t.Fatalf("call: %v %+v", err, res)
	}
	if _, err := c.Activity(ctx, activity.Filter{Server: "s"}, 7); err != nil {
		t.Fatal(err)
	}
	raw, err := c.Sessions(ctx)
	if err != nil || string(raw) != `[{"server":"r"}]` {
		t.Fatalf("sessions: %v %s", err, raw)
	}
	cl, err := c.ClearWrites(ctx, "a b")
	if err != nil || !cl.Cleared || cl.Latch.Tool != "t" {
		t.Fatalf("clear: %v %+v", err, cl)
	}

	want := []string{
		`POST /v1/servers/s/approve  map[expected_hashes:map[]]`, // an empty map is sent: approve no tool
		`POST /v1/servers/s/tools/approve  map[all:true except:[x] expected_hashes:map[a:h]]`,
		`POST /v1/servers/s/tools/block  map[tools:[b]]`,
		`POST /v1/servers/s/call  map[arguments:map[k:1] tool:t]`,
		`GET /v1/activity limit=7&server=s map[]`,
		`GET /v1/sessions  map[]`,
		`DELETE /v1/writes/a%20b  map[]`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d: %+v", len(got), len(want), got)
	}
	for i, s := range got {
		line := s.method + " " + s.path + " " + s.query + " " + fmtMap(s.body)
		if line != want[i] {
			t.Errorf("request %d: %s\n              want %s", i, line, want[i])
		}
	}
}

func fmtMap(m map[string]any) string { return fmt.Sprint(m) } // sorted keys

// A daemon that takes connections but never answers does not hang the
// client: it gives up after Timeout and says what may be wrong; a tool call
// is not bounded by it.
func TestSilentDaemonTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	c := New("http://"+ln.Addr().String(), "tok")
	c.Timeout = 100 * time.Millisecond
	_, err = c.Status(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no answer from warden") {
		t.Fatalf("Status against a silent daemon: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, "s", "t", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call was cut before its own deadline: %v", err)
	}
}
