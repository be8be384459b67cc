package gateway

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/store"
	"github.com/wardenmcp/warden/upstream"
	"github.com/wardenmcp/warden/writes"
)

// newTestGateway is a gateway with one server, "s", as its upstream sees
// it (peer), so that the test can hand it what an upstream would.
func newTestGateway(t *testing.T) peer {
	t.Helper()
	st, err := store.Open(t.Context(), store.Options{Path: filepath.Join(t.TempDir(), "w.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	approvals, err := approval.Open(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := writes.Open(st)
	if err != nil {
		t.Fatal(err)
	}
	act, err := activity.Open(st, 100, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { act.Close() })
	g := New(Deps{Approvals: approvals, Writes: ledger, Activity: act})
	// An upstream nothing answers: the test hands the gateway its listings.
	g.Reconcile(map[string]*config.Server{"s": {Name: "s", URL: "http://127.0.0.1:1/mcp", Transport: "http", Trusted: true, CallTimeout: time.Second}})
	t.Cleanup(g.Close)
	return peer{g}
}

func writeTool(desc string, readOnly bool) *mcp.Tool {
	no := false
	return &mcp.Tool{Name: "w", Description: desc, InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &no}}
}

// A listing the approval records refuse (here: a tool listed twice, the
// second time as a read tool with a new description) must not be served:
// the last accepted definition, its approval and its class stay.
func TestRefusedListingKeepsTheLastAccepted(t *testing.T) {
	g := newTestGateway(t)
	g.Inventory("s", &upstream.Inventory{Seq: 1 << 40, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("v1", false)}})
	g.Inventory("s", &upstream.Inventory{Seq: 1<<40 + 1, Init: &mcp.InitializeResult{},
		Tools: []*mcp.Tool{writeTool("v1", false), writeTool("v2: now harmless", true)}})
	tools := g.Tools("s")
	if len(tools) != 1 || tools[0].Description != "v1" || tools[0].Class != writes.ClassWrite || !tools[0].Visible {
		t.Fatalf("after a refused listing the gateway serves %+v; want the accepted v1, class write", tools)
	}
}

// The records may approve another definition than the one this gateway
// last listed: another instance's listing on a shared store, or one applied
// between its own listing and a call. It serves and runs only the approved
// one: here it listed v2 (held), and a listing of v1 elsewhere made the
// record approved again; v2 stays held, in the list and at a call.
func TestServesOnlyTheApprovedDefinition(t *testing.T) {
	g := newTestGateway(t)
	v1 := writeTool("v1", false)
	g.Inventory("s", &upstream.Inventory{Seq: 1 << 42, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{v1}})
	g.Inventory("s", &upstream.Inventory{Seq: 1<<42 + 1, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("v2: now harmless", true)}})
	if _, err := g.deps.Approvals.Apply("s", true, 1<<42+2, []*mcp.Tool{writeTool("v1", false)}); err != nil {
		t.Fatal(err)
	}
	if h, _ := approval.Hash(v1); func() bool { st, _ := g.deps.Approvals.Check("s", "w", h); return st != approval.StatusApproved }() {
		t.Fatal("the records do not approve v1 again")
	}
	tools := g.Tools("s")
	if len(tools) != 1 || tools[0].Description != "v2: now harmless" || tools[0].Visible || tools[0].Status != approval.StatusChanged {
		t.Fatalf("the gateway serves %+v; want its v2 held as changed", tools)
	}
	c, _ := g.conn("s")
	_, err := g.admitTool(c, Call{Server: "s", Tool: "w"})
	if r, ok := err.(*Refusal); !ok || r.Code != CodeChanged || !strings.Contains(r.Text, "approved with another definition than this Warden instance was given") ||
		!strings.Contains(r.Text, "warden review s") {
		t.Fatalf("a call of v2: %v; want %s saying the records approved another definition", err, CodeChanged)
	}
}

// A listing older than one already applied is not served either.
func TestStaleListingNotServed(t *testing.T) {
	g := newTestGateway(t)
	g.Inventory("s", &upstream.Inventory{Seq: 1 << 41, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("new", false)}})
	g.Inventory("s", &upstream.Inventory{Seq: 1<<41 - 1, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("old", false)}})
	if tools := g.Tools("s"); len(tools) != 1 || tools[0].Description != "new" {
		t.Fatalf("a stale listing replaced a newer one: %+v", tools)
	}
}

// countingView counts what the gateway tells a view.
type countingView struct {
	mu      sync.Mutex
	changed map[string]int
}

func (v *countingView) Changed(server string) {
	v.mu.Lock()
	v.changed[server]++
	v.mu.Unlock()
}
func (v *countingView) Log(string, *mcp.LoggingMessageParams)                          {}
func (v *countingView) ResourceUpdated(string, *mcp.ResourceUpdatedNotificationParams) {}

func (v *countingView) told(server string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.changed[server]
}

// Every change clients may see of a server gives it a new version and is
// told to the views once: a listing the records take (also when it changes
// the records, which tell of that themselves), an approval decision, a
// quarantine, a config change of a tool. A stale or refused listing is no
// change.
func TestInventoryVersionedOncePerChange(t *testing.T) {
	g := newTestGateway(t)
	view := &countingView{changed: map[string]int{}}
	g.AddView(view)
	if l := g.Listed("s"); l != (Listing{}) || view.told("s") != 0 {
		t.Fatalf("before any listing: %+v, told %d times; want nothing (nothing to show)", l, view.told("s"))
	}
	told, last := 0, uint64(0)
	step := func(what string, change bool, f func()) {
		t.Helper()
		f()
		l := g.Listed("s")
		if change {
			told++
		}
		if got := view.told("s"); got != told {
			t.Fatalf("%s: the views were told %d times in all, want %d", what, got, told)
		}
		if change != (l.Version > last) || l.Version < last {
			t.Fatalf("%s: version %d after %d; a change: %v", what, l.Version, last, change)
		}
		last = l.Version
	}
	other := &mcp.Tool{Name: "r", InputSchema: map[string]any{"type": "object"}}
	seq := uint64(1 << 42)
	step("the first listing, new records", true, func() {
		g.Inventory("s", &upstream.Inventory{Seq: seq, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("v1", false)}})
	})
	if l := g.Listed("s"); l.Seq != seq {
		t.Fatalf("listed seq %d, want %d", l.Seq, seq)
	}
	step("a new tool: a pending record", true, func() {
		g.Inventory("s", &upstream.Inventory{Seq: seq + 1, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("v1", false), other}})
	})
	step("the same listing again", true, func() {
		g.Inventory("s", &upstream.Inventory{Seq: seq + 2, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("v1", false), other}})
	})
	step("a stale listing", false, func() {
		g.Inventory("s", &upstream.Inventory{Seq: seq - 1, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("old", false)}})
	})
	step("a refused listing", false, func() {
		g.Inventory("s", &upstream.Inventory{Seq: seq + 3, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{other, other}})
	})
	step("an approval decision", true, func() {
		if _, err := g.deps.Approvals.Block("s", []string{"w"}, "test"); err != nil {
			t.Fatal(err)
		}
	})
	step("a quarantine", true, func() {
		if err := g.deps.Approvals.Quarantine("s", "test"); err != nil {
			t.Fatal(err)
		}
	})
	step("a tool hidden by the config", true, func() {
		g.Reconcile(map[string]*config.Server{"s": {Name: "s", URL: "http://127.0.0.1:1/mcp", Transport: "http", Trusted: true, CallTimeout: time.Second,
			Tools: map[string]config.ToolOverride{"r": {Hidden: true}}}})
	})
	if tools := g.Tools("s"); len(tools) != 2 || !tools[1].Hidden {
		t.Fatalf("after the override the tools are %+v", tools)
	}
	step("the server removed", true, func() { g.Reconcile(map[string]*config.Server{}) })
	if l := g.Listed("s"); l.Seq != 0 || g.Tools("s") != nil {
		t.Fatalf("a removed server still has a listing: %+v", l)
	}
}

// A server starting is told to the views only once it has a listing: the
// records it gets and its start change nothing clients see before.
func TestNothingToldBeforeTheFirstListing(t *testing.T) {
	g := newTestGateway(t)
	view := &countingView{changed: map[string]int{}}
	g.AddView(view)
	g.Reconcile(map[string]*config.Server{
		"s": {Name: "s", URL: "http://127.0.0.1:1/mcp", Transport: "http", Trusted: true, CallTimeout: time.Second},
		"t": {Name: "t", URL: "http://127.0.0.1:1/mcp", Transport: "http", CallTimeout: time.Second},
	})
	if view.told("t") != 0 || g.Listed("t").Version != 0 {
		t.Fatalf("a server with nothing listed was told %d times (version %d)", view.told("t"), g.Listed("t").Version)
	}
}
