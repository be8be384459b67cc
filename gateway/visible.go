package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/upstream"
	"github.com/wardenmcp/warden/writes"
)

// Tool is one upstream tool with the policy view of it.
type Tool struct {
	*mcp.Tool
	Status  approval.Status
	Class   writes.Class
	Hidden  bool
	Visible bool // listed and callable
}

// Tools returns server's current tools with their policy state, in the
// upstream's order. A quarantined server's tools are all invisible.
func (g *Gateway) Tools(server string) []Tool {
	c, ok := g.conn(server)
	inv, pins := g.inv.pinned(server)
	if !ok || inv == nil {
		return nil
	}
	quarantined := g.deps.Approvals.Quarantined(server)
	cfg := c.Config()
	out := make([]Tool, 0, len(inv.Tools))
	for _, t := range inv.Tools {
		st, _ := g.deps.Approvals.Check(server, t.Name, pins[t.Name])
		o := cfg.Tools[t.Name]
		out = append(out, Tool{
			Tool: t, Status: st, Hidden: o.Hidden,
			Class:   writes.Classify(o.Class, t.Annotations),
			Visible: !quarantined && !o.Hidden && st == approval.StatusApproved,
		})
	}
	return out
}

// Instructions are what an exposed server says of itself at initialize.
func (g *Gateway) Instructions(server string) string {
	if inv := g.exposedInventory(server); inv != nil && inv.Init != nil {
		return inv.Init.Instructions
	}
	return ""
}

// ToolTokens estimates what server's visible tools cost a client's context
// on /mcp: the bytes of their JSON definitions, named "<server>__<tool>",
// divided by 4 (the usual rule of thumb for BPE tokenizers).
func (g *Gateway) ToolTokens(server string) int {
	n := 0
	for _, t := range g.Tools(server) {
		if t.Visible {
			b, _ := json.Marshal(t.Tool)
			n += len(b) + len(server) + len("__")
		}
	}
	return n / 4
}

// Prompts, Resources and Templates return what an exposed server offers.
func (g *Gateway) Prompts(server string) []*mcp.Prompt {
	if inv := g.exposedInventory(server); inv != nil {
		return inv.Prompts
	}
	return nil
}

func (g *Gateway) Resources(server string) []*mcp.Resource {
	if inv := g.exposedInventory(server); inv != nil {
		return inv.Resources
	}
	return nil
}

func (g *Gateway) Templates(server string) []*mcp.ResourceTemplate {
	if inv := g.exposedInventory(server); inv != nil {
		return inv.Templates
	}
	return nil
}

func (g *Gateway) exposedInventory(server string) *upstream.Inventory {
	if _, ok := g.conn(server); !ok || g.deps.Approvals.Quarantined(server) {
		return nil
	}
	return g.inv.get(server)
}
