package gateway

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.etcd.io/bbolt"

	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/upstream"
	"github.com/wardenmcp/warden/writes"
)

func newTestGateway(t *testing.T) *Gateway {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "w.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	approvals, err := approval.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := writes.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	act, err := activity.Open(db, 100, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { act.Close() })
	g := New(Deps{Approvals: approvals, Writes: ledger, Activity: act})
	// An upstream nothing answers: the test hands the gateway its listings.
	g.Reconcile(map[string]*config.Server{"s": {Name: "s", URL: "http://127.0.0.1:1/mcp", Transport: "http", Trusted: true, CallTimeout: time.Second}})
	t.Cleanup(g.Close)
	return g
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

// A listing older than one already applied is not served either.
func TestStaleListingNotServed(t *testing.T) {
	g := newTestGateway(t)
	g.Inventory("s", &upstream.Inventory{Seq: 1 << 41, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("new", false)}})
	g.Inventory("s", &upstream.Inventory{Seq: 1<<41 - 1, Init: &mcp.InitializeResult{}, Tools: []*mcp.Tool{writeTool("old", false)}})
	if tools := g.Tools("s"); len(tools) != 1 || tools[0].Description != "new" {
		t.Fatalf("a stale listing replaced a newer one: %+v", tools)
	}
}
