package e2e

// End-to-end tests of per-tool config overrides (`tools.<name>.class` and
// `tools.<name>.hidden`) and of the names the aggregated /mcp endpoint must
// alter (characters outside [A-Za-z0-9_-], longer than 64), against a real
// daemon and an in-process Go SDK fixture upstream over streamable HTTP.

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
	"github.com/wardenmcp/warden/surface"
)

// ovServer is the mcpServers entry of an in-process HTTP fixture with a short
// callTimeout and the given per-tool overrides.
func ovServer(t *testing.T, f *fixture.Fixture, tools map[string]any) map[string]any {
	t.Helper()
	cfg := map[string]any{"url": f.Serve(t), "trusted": true, "callTimeout": "300ms"}
	if tools != nil {
		cfg["tools"] = tools
	}
	return cfg
}

// ovWaitListed waits until the session lists every name in want, and returns
// the list.
func ovWaitListed(t *testing.T, cs *mcp.ClientSession, want ...string) []string {
	t.Helper()
	var names []string
	wardentest.WaitFor(t, 20*time.Second, "tools/list to show "+strings.Join(want, ", "), func() bool {
		names = wardentest.ToolNames(t, cs)
		for _, n := range want {
			if !slices.Contains(names, n) {
				return false
			}
		}
		return true
	})
	return names
}

// ovClass checks GET /v1/servers/{s}/tools reports tool with class.
func ovClass(t *testing.T, w *wardentest.Warden, server, tool, class string) {
	t.Helper()
	x, ok := w.Tools(t, server)[tool]
	if !ok || !x.Present || x.Class != class {
		t.Fatalf("GET /v1/servers/%s/tools: %s: present=%v class=%q, want present with class %q", server, tool, x.Present, x.Class, class)
	}
}

// A tool the upstream marks read-only but configured `class: "write"` is a
// write: when it times out the server latches, and further writes (and that
// tool itself) are refused with WRITES_LATCHED naming the clear command, on
// both surfaces, without reaching the upstream. True reads still run.
func TestToolOverrideClassWriteLatches(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	if def, _ := f.Tool(fixture.ToolRead); def.Annotations == nil || !def.Annotations.ReadOnlyHint {
		t.Fatalf("fixture %s is not annotated read-only: %+v", fixture.ToolRead, def.Annotations)
	}
	w := wardentest.Start(t, map[string]any{
		"s": ovServer(t, f, map[string]any{fixture.ToolRead: map[string]any{"class": "write"}}),
	})
	w.WaitReady(t, "s")
	ovClass(t, w, "s", fixture.ToolRead, "write")
	cs := w.Connect(t, "/mcp/s", nil)

	// Not latched to begin with.
	wlMustWrite(t, cs, map[string]any{"key": "k", "value": "before"})

	slow := map[string]any{"key": "k", "sleep_ms": 5000}
	start := time.Now()
	res := wardentest.CallResult(t, cs, fixture.ToolRead, slow)
	if !res.IsError || wlOutcome(res) != "unknown" || !strings.Contains(wardentest.ResultText(res), "warden writes clear s") {
		t.Fatalf("timed-out read_value (class write): want isError, warden/outcome unknown, naming the clear command; got isError=%v _meta=%v %q",
			res.IsError, res.Meta, wardentest.ResultText(res))
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("the call was not cut at callTimeout: %s", d)
	}
	wlWantLatch(t, w, fixture.ToolRead, slow, "timeout", "mcp/s")
	readCalls := f.Calls(fixture.ToolRead)
	if readCalls != 1 {
		t.Fatalf("read_value reached the upstream %d times, want 1", readCalls)
	}

	// The next write is refused, on /mcp/s and on /mcp, and is not sent.
	wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "after"}),
		"WRITES_LATCHED", "warden writes clear s", fixture.ToolRead, "timeout")
	agg := w.Connect(t, "/mcp", nil)
	wardentest.WantRefusal(t, wardentest.CallResult(t, agg, "s__"+fixture.ToolWrite, map[string]any{"key": "k", "value": "after-agg"}),
		"WRITES_LATCHED", "warden writes clear s")
	// The overridden tool is a write itself: refused too.
	wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolRead, map[string]any{"key": "k"}), "WRITES_LATCHED", "warden writes clear s")
	if n := f.WriteDispatches(); n != 1 {
		t.Fatalf("write dispatches = %d, want 1 (only the write before the latch)", n)
	}
	if n := f.Calls(fixture.ToolRead); n != readCalls {
		t.Fatalf("a refused read_value reached the upstream (%d calls, want %d)", n, readCalls)
	}
	if got := f.Value("k"); got != "before" {
		t.Fatalf("value k = %q, want %q: a refused write was applied", got, "before")
	}
	// A tool that is a read (echo, no override) still runs.
	if got := wardentest.CallText(t, cs, fixture.ToolEcho, map[string]any{"x": 1}); got != `{"x":1}` {
		t.Fatalf("echo while latched = %q", got)
	}
}

// A tool the upstream marks as a write but configured `class: "read"` does not
// latch when it times out; the same timeout on a server without the override
// (in the same daemon) does, so the setup is one that latches.
func TestToolOverrideClassReadNoLatch(t *testing.T) {
	fr := fixture.NewServer(fixture.Options{})
	fp := fixture.NewServer(fixture.Options{})
	if def, _ := fr.Tool(fixture.ToolWrite); writesClassOf(def) != "write" {
		t.Fatalf("fixture %s is not annotated as a write: %+v", fixture.ToolWrite, def.Annotations)
	}
	w := wardentest.Start(t, map[string]any{
		"r":     ovServer(t, fr, map[string]any{fixture.ToolWrite: map[string]any{"class": "read"}}),
		"plain": ovServer(t, fp, nil),
	})
	w.WaitReady(t, "r")
	w.WaitReady(t, "plain")
	ovClass(t, w, "r", fixture.ToolWrite, "read")
	ovClass(t, w, "plain", fixture.ToolWrite, "write")
	cs := w.Connect(t, "/mcp/r", nil)

	slow := map[string]any{"key": "k", "value": "slow", "sleep_ms": 5000}
	res := wardentest.CallResult(t, cs, fixture.ToolWrite, slow)
	if !res.IsError {
		t.Fatalf("write_value past callTimeout must fail, got %q", wardentest.ResultText(res))
	}
	// It was sent (and then cancelled): an unknown outcome, yet no latch.
	if n := fr.WriteDispatches(); n != 1 {
		t.Fatalf("write dispatches = %d, want 1: the timed-out call must have reached the upstream", n)
	}
	wardentest.WaitFor(t, 20*time.Second, "the upstream to see the timed-out call cancelled", func() bool { return fr.WritesCancelled() == 1 })
	if ls := wlLatches(t, w); len(ls) != 0 {
		t.Fatalf("a timed-out call of a tool configured class read latched: %+v", ls)
	}
	// Writes and destructive calls to r still go through.
	wlMustWrite(t, cs, map[string]any{"key": "k", "value": "after"})
	if got := wardentest.CallText(t, cs, fixture.ToolDelete, map[string]any{"key": "k"}); got != "deleted" {
		t.Fatalf("delete_value after the timeout = %q, want deleted", got)
	}
	if n := fr.Deletes(); n != 1 {
		t.Fatalf("deletes = %d, want 1", n)
	}

	// Control: without the override the same timeout latches.
	pcs := w.Connect(t, "/mcp/plain", nil)
	res = wardentest.CallResult(t, pcs, fixture.ToolWrite, slow)
	if !res.IsError || wlOutcome(res) != "unknown" {
		t.Fatalf("control: timed-out write_value: got isError=%v _meta=%v %q", res.IsError, res.Meta, wardentest.ResultText(res))
	}
	ls := wlLatches(t, w)
	if len(ls) != 1 || ls[0].Server != "plain" || ls[0].Tool != fixture.ToolWrite || ls[0].Reason != "timeout" {
		t.Fatalf("control: latches = %+v, want only plain's write_value (timeout)", ls)
	}
	wardentest.WantRefusal(t, wardentest.CallResult(t, pcs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v"}), "WRITES_LATCHED", "warden writes clear plain")
	// And r is still not latched.
	wlMustWrite(t, cs, map[string]any{"key": "k2", "value": "still-open"})
}

// writesClassOf is the class the fixture's annotations make (PRODUCT.md's rule),
// to check the premise of a test.
func writesClassOf(def *mcp.Tool) string {
	a := def.Annotations
	switch {
	case a != nil && a.ReadOnlyHint:
		return "read"
	case a != nil && a.DestructiveHint != nil && !*a.DestructiveHint:
		return "write"
	}
	return "destructive"
}

// A `hidden: true` tool is absent from tools/list on /mcp (prefixed) and on
// /mcp/{server}, and calling it is refused on both without reaching the
// upstream, while it is present and approved upstream.
func TestToolOverrideHidden(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{
		"s": ovServer(t, f, map[string]any{
			fixture.ToolEcho:   map[string]any{"hidden": true},
			fixture.ToolDelete: map[string]any{"hidden": true},
		}),
	})
	w.WaitReady(t, "s")
	tools := w.Tools(t, "s")
	for _, name := range []string{fixture.ToolEcho, fixture.ToolDelete} {
		if x := tools[name]; !x.Present || x.Status != "approved" || !x.Hidden {
			t.Fatalf("GET /v1/servers/s/tools: %s: present=%v status=%s hidden=%v, want present, approved and hidden", name, x.Present, x.Status, x.Hidden)
		}
	}

	single := w.Connect(t, "/mcp/s", nil)
	agg := w.Connect(t, "/mcp", nil)
	names := ovWaitListed(t, single, fixture.ToolRead, fixture.ToolWrite)
	for _, hidden := range []string{fixture.ToolEcho, fixture.ToolDelete} {
		if slices.Contains(names, hidden) {
			t.Fatalf("/mcp/s lists hidden tool %s: %v", hidden, names)
		}
	}
	names = ovWaitListed(t, agg, "s__"+fixture.ToolRead, "s__"+fixture.ToolWrite)
	for _, n := range names {
		if strings.Contains(n, fixture.ToolEcho) || strings.Contains(n, fixture.ToolDelete) {
			t.Fatalf("/mcp lists hidden tool as %s: %v", n, names)
		}
	}

	f.SetValue("k", "v")
	for _, c := range []struct {
		cs   *mcp.ClientSession
		name string
	}{
		{single, fixture.ToolEcho}, {single, fixture.ToolDelete},
		{agg, "s__" + fixture.ToolEcho}, {agg, "s__" + fixture.ToolDelete},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: map[string]any{"key": "k"}})
		cancel()
		if err == nil && !res.IsError {
			t.Fatalf("call of hidden tool %s answered %q, want a refusal or unknown tool", c.name, wardentest.ResultText(res))
		}
	}
	if n, d := f.Calls(fixture.ToolEcho), f.Calls(fixture.ToolDelete); n != 0 || d != 0 {
		t.Fatalf("hidden tools reached the upstream: echo %d, delete_value %d calls", n, d)
	}
	if got := f.Value("k"); got != "v" {
		t.Fatalf("value k = %q: a hidden delete_value ran", got)
	}
	// The visible tools still work.
	if got := wardentest.CallText(t, agg, "s__"+fixture.ToolRead, map[string]any{"key": "k"}); got != "v" {
		t.Fatalf("s__read_value = %q, want v", got)
	}
}

// Names /mcp must alter: an 80-character dotted name, another that differs
// from it only past the 64th character, a short dotted name whose clean twin
// also exists, and names at the 64-character boundary. Each is listed under
// a valid, distinct name that is stable across a restart, and calling that
// name through /mcp runs exactly that upstream tool.
func TestAlteredNameReachesExactTool(t *testing.T) {
	long := strings.Repeat("very.long.", 8) // 80 characters, dotted
	if len(long) != 80 {
		t.Fatalf("long name has %d characters", len(long))
	}
	fit := strings.Repeat("f", 61)  // s__ + 61 = 64: unchanged
	over := strings.Repeat("g", 62) // s__ + 62 = 65: altered
	originals := []string{
		long,
		long[:79] + "X", // same first 79 characters
		"x.y",
		"x_y", // what x.y sanitizes to
		fit,
		over,
	}
	f := fixture.NewServer(fixture.Options{})
	for i, name := range originals {
		ran := "ran:" + name
		f.Server.AddTool(&mcp.Tool{
			Name:        name,
			Description: "altered-name tool " + itoa(i),
			InputSchema: map[string]any{"type": "object"},
			Annotations: fixture.ClassAnnotations("read"),
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ran + " " + string(req.Params.Arguments)}}}, nil
		})
	}
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")

	valid := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	// listed maps each original to the name /mcp lists it under (found by
	// its unique description).
	listed := func(w *wardentest.Warden) map[string]string {
		cs := w.Connect(t, "/mcp", nil)
		defer cs.Close()
		out := map[string]string{}
		var all []string
		found := wardentest.Poll(20*time.Second, func() bool {
			clear(out)
			all = all[:0]
			for tool, err := range cs.Tools(context.Background(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, tool.Name)
				for i, name := range originals {
					if tool.Description == "altered-name tool "+itoa(i) {
						out[name] = tool.Name
					}
				}
			}
			return len(out) == len(originals)
		})
		if !found {
			t.Fatalf("after 20s /mcp lists %d of the %d added tools (two names collide?): found %v; listed %v", len(out), len(originals), out, all)
		}
		return out
	}
	names := listed(w)

	seen := map[string]string{}
	for _, orig := range originals {
		got := names[orig]
		if !valid.MatchString(got) || !strings.HasPrefix(got, "s__") {
			t.Errorf("%q is listed as %q: want s__..., only [A-Za-z0-9_-], at most 64 characters", orig, got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%q and %q are both listed as %q", prev, orig, got)
		}
		seen[got] = orig
	}
	for _, orig := range []string{"x_y", fit} {
		if names[orig] != "s__"+orig {
			t.Errorf("%q needs no change but is listed as %q", orig, names[orig])
		}
	}
	for _, orig := range []string{long, long[:79] + "X", "x.y", over} {
		if names[orig] == "s__"+orig {
			t.Errorf("%q is listed unchanged", orig)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	cs := w.Connect(t, "/mcp", nil)
	for i, orig := range originals {
		args := map[string]any{"i": i}
		b, _ := json.Marshal(args)
		if got, want := wardentest.CallText(t, cs, names[orig], args), "ran:"+orig+" "+string(b); got != want {
			t.Errorf("calling %q (listed for %q) answered %q, want %q", names[orig], orig, got, want)
		}
	}
	// /mcp/s shows the upstream's names unchanged, and they work.
	single := w.Connect(t, "/mcp/s", nil)
	ovWaitListed(t, single, originals...)
	if got := wardentest.CallText(t, single, long, map[string]any{}); got != "ran:"+long+" {}" {
		t.Errorf("/mcp/s %q answered %q", long, got)
	}

	// The altered names are stable: the same after a restart.
	cs.Close()
	single.Close()
	w.Stop()
	w = wardentest.StartWith(t, w.ConfigPath, w.StateDir)
	w.WaitReady(t, "s")
	if again := listed(w); !maps.Equal(again, names) {
		t.Fatalf("names after restart = %v, before = %v", again, names)
	}
}

// A tool whose own name equals the name /mcp gave another tool of the same
// server by altering it (a.b → s__a_b_<hash>) does not take that name over:
// neither tool answers to it, before and after the newcomer is approved.
func TestAlteredNameNeverTakenOver(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	answer := func(text string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		}
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	f.Server.AddTool(&mcp.Tool{Name: "a.b", InputSchema: map[string]any{"type": "object"}, Annotations: ro}, answer("ran a.b"))
	prompt := func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}
	f.Server.AddPrompt(&mcp.Prompt{Name: "p.q"}, prompt)
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")
	cs := w.Connect(t, "/mcp", nil)
	exposed := surface.Join("s", "a.b")
	ovWaitListed(t, cs, exposed)
	if got := wardentest.ResultText(wardentest.CallResult(t, cs, exposed, nil)); got != "ran a.b" {
		t.Fatalf("%s = %q before the newcomer", exposed, got)
	}

	prompts := func() []string {
		var names []string
		for p, err := range cs.Prompts(ctxT(t, 10*time.Second), nil) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, p.Name)
		}
		return names
	}
	exposedPrompt := surface.Join("s", "p.q")
	wardentest.WaitFor(t, 10*time.Second, exposedPrompt+" listed", func() bool { return slices.Contains(prompts(), exposedPrompt) })
	f.Server.AddPrompt(&mcp.Prompt{Name: strings.TrimPrefix(exposedPrompt, "s__")}, prompt)
	wardentest.WaitFor(t, 10*time.Second, exposedPrompt+" unlisted once a prompt's own name equals it", func() bool {
		return !slices.Contains(prompts(), exposedPrompt)
	})

	twin := strings.TrimPrefix(exposed, "s__")
	f.Server.AddTool(&mcp.Tool{Name: twin, InputSchema: map[string]any{"type": "object"}, Annotations: ro}, answer("ran the newcomer"))
	apWaitTool(t, w, "s", twin, "the newcomer recorded", apStatusIs(approval.StatusPending))
	for _, approved := range []bool{false, true} {
		if approved {
			if code, _, stderr := w.CLI(t, "review", "approve", "s", twin, "--yes"); code != 0 {
				t.Fatalf("review approve: exit %d: %s", code, stderr)
			}
			apWaitTool(t, w, "s", twin, "the newcomer approved", apStatusIs(approval.StatusApproved))
		}
		wardentest.WaitFor(t, 10*time.Second, exposed+" unlisted", func() bool { return !slices.Contains(wardentest.ToolNames(t, cs), exposed) })
		res, err := cs.CallTool(ctxT(t, 10*time.Second), &mcp.CallToolParams{Name: exposed})
		if err == nil && !res.IsError {
			t.Fatalf("approved=%v: %s answered %q, want an error", approved, exposed, wardentest.ResultText(res))
		}
	}
}
