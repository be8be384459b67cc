package e2e

import (
	"context"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
	"github.com/wardenmcp/warden/writes"
)

// A latched write's record says what finds the call upstream: when it was
// sent, on which endpoint (through warden stdio too), by which client and
// session, its arguments' names and sizes, and their values only for a
// tool whose config says recordArgs. warden writes and warden writes clear
// show it. Real SDK clients: over HTTP (2025 and 2026-07-28, the fast
// paths and the SDK server's) and through warden stdio.
func TestWriteLatchDetails(t *testing.T) {
	up := func(extra map[string]any) map[string]any {
		cfg := map[string]any{"url": fixture.NewServer(fixture.Options{}).Serve(t), "trusted": true, "callTimeout": "300ms"}
		maps.Copy(cfg, extra)
		return cfg
	}
	w := wardentest.Start(t, map[string]any{
		"s": up(map[string]any{"tools": map[string]any{fixture.ToolWrite: map[string]any{"recordArgs": true}}}),
		"t": up(nil), "u": up(nil), "v": up(nil),
	})
	for _, s := range []string{"s", "t", "u", "v"} {
		w.WaitReady(t, s)
	}
	args := map[string]any{"key": "k", "value": "hello", "sleep_ms": 5000}
	unknown := func(cs *mcp.ClientSession, tool string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || !res.IsError || wlOutcome(res) != "unknown" {
			t.Fatalf("%s past callTimeout: %v %+v; want an unknown outcome", tool, err, res)
		}
	}
	latchOf := func(server string) writes.Latch {
		t.Helper()
		var ls []writes.Latch
		if code := w.API(t, "GET", "/v1/writes", nil, &ls); code != http.StatusOK {
			t.Fatalf("GET /v1/writes: %d", code)
		}
		for _, l := range ls {
			if l.Server == server {
				return l
			}
		}
		t.Fatalf("no latch of %s in %+v", server, ls)
		return writes.Latch{}
	}
	connect := func(name, path string, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.2.3"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: w.URL(path)}, sopts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}

	// Over HTTP, on s's own endpoint: values recorded.
	direct := connect("latch-client", "/mcp/s", wardentest.Session2025)
	before := time.Now()
	unknown(direct, fixture.ToolWrite)
	l := latchOf("s")
	wantArgs := []writes.Arg{{Name: "key", Bytes: 3, Value: `"k"`}, {Name: "sleep_ms", Bytes: 4, Value: "5000"}, {Name: "value", Bytes: 7, Value: `"hello"`}}
	if l.Surface != "mcp/s" || l.Client != (writes.Caller{Name: "latch-client", Version: "1.2.3", Session: direct.ID()}) ||
		!reflect.DeepEqual(l.Args, wantArgs) || l.SentAt.Before(before.Add(-time.Second)) || !l.SentAt.Before(l.At) {
		t.Errorf("latch over HTTP: %+v; want surface mcp/s, the client and its session %s, arguments %+v, sent before it latched", l, direct.ID(), wantArgs)
	}

	// Through warden stdio, on /mcp: names and sizes only.
	bridged := connectStdio(t, w, mcp.NewClient(&mcp.Implementation{Name: "bridged-client", Version: "2"}, nil), "2025-11-25")
	defer bridged.Close()
	unknown(bridged, "t__"+fixture.ToolWrite)
	l = latchOf("t")
	if l.Surface != "stdio:mcp" || l.Client.Name != "bridged-client" || l.Client.Session == "" ||
		!reflect.DeepEqual(l.Args, []writes.Arg{{Name: "key", Bytes: 3}, {Name: "sleep_ms", Bytes: 4}, {Name: "value", Bytes: 7}}) {
		t.Errorf("latch through warden stdio: %+v; want surface stdio:mcp, the bridged client, arguments without values", l)
	}

	// A 2026-07-28 client names itself in each request; it has no session.
	unknown(connect("stateless-client", "/mcp/u", nil), fixture.ToolWrite)
	if l = latchOf("u"); l.Surface != "mcp/u" || l.Client != (writes.Caller{Name: "stateless-client", Version: "1.2.3"}) {
		t.Errorf("latch of a 2026-07-28 client: %+v", l)
	}
	// A call with a progress token goes to the SDK server, not the fast path.
	sdk := connect("progress-client", "/mcp?view=search", wardentest.Session2025)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := sdk.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Meta: mcp.Meta{"progressToken": "p1"},
		Arguments: map[string]any{"name": "v__" + fixture.ToolWrite, "arguments": args}}); err != nil {
		t.Fatal(err)
	}
	if l = latchOf("v"); l.Surface != "mcp?view=search" || l.Client != (writes.Caller{Name: "progress-client", Version: "1.2.3", Session: sdk.ID()}) {
		t.Errorf("latch of a call through the search view's SDK server: %+v", l)
	}

	_, out, _ := w.CLI(t, "writes")
	_, _, asked := w.CLI(t, "writes", "clear", "s") // not confirmed: shows, keeps
	for what, text := range map[string]string{"warden writes": out, "warden writes clear s": asked} {
		for _, want := range []string{"via mcp/s", "by latch-client 1.2.3 (session " + direct.ID() + ")", `value 7 bytes = "hello"`} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, text)
			}
		}
	}
	if !strings.Contains(out, "via stdio:mcp") || !strings.Contains(out, "by bridged-client 2") || !strings.Contains(out, "arguments: key 3 bytes; sleep_ms 4 bytes; value 7 bytes\n") {
		t.Errorf("warden writes lacks t's call through warden stdio:\n%s", out)
	}
}
