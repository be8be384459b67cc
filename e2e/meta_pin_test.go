package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A tool's _meta and icons are pinned like the rest of its definition: when
// the server changes only _meta["ui/resourceUri"], and then only the icon
// URL, the tool is changed, and no client (on /mcp and /mcp/{server}, in
// both protocol eras) receives anything of the new value or can call the
// tool until an operator approves it with the real CLI.
func TestMetaAndIconChangesHeld(t *testing.T) {
	up := fixture.NewServer(fixture.Options{})
	const (
		metaV1, metaV2 = "ui://fixture/v1.html", "ui://fixture/v2.html"
		iconV1, iconV2 = "https://icons.test/v1.png", "https://icons.test/v2.png"
	)
	set := func(meta, icon string) {
		t.Helper()
		if err := up.UpdateTool(fixture.ToolEcho, func(tl *mcp.Tool) {
			tl.Meta = mcp.Meta{"ui/resourceUri": meta}
			tl.Icons = []mcp.Icon{{Source: icon, MIMEType: "image/png"}}
		}); err != nil {
			t.Fatal(err)
		}
	}
	set(metaV1, iconV1)
	p := wardentest.ServeProcess(t, "", map[string]any{"s": map[string]any{"url": up.Serve(t), "trusted": true}})
	bin := testenv.BuildBinary(t, "./cmd/warden")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return testenv.Run(t, bin, nil, append(args, "--config", p.ConfigPath, "--state-dir", p.StateDir)...)
	}
	cli := func(args ...string) (int, string) {
		t.Helper()
		code, stdout, stderr := run(args...)
		return code, stdout + stderr
	}
	status := func() string {
		_, out, _ := run("tools", "s", "--json")
		var tools []api.Tool
		_ = json.Unmarshal([]byte(out), &tools)
		for _, tl := range tools {
			if tl.Name == fixture.ToolEcho {
				return string(tl.Status)
			}
		}
		return ""
	}
	wardentest.WaitFor(t, 20*time.Second, "echo approved by the baseline", func() bool { return status() == "approved" })

	type client struct {
		name, echo string
		cs         *mcp.ClientSession
	}
	var clients []client
	for _, path := range []string{"/mcp/s", "/mcp"} {
		for _, era := range []string{"2025-11-25", "2026-07-28"} {
			echo := fixture.ToolEcho
			if path == "/mcp" {
				echo = "s__" + echo
			}
			cs := wardentest.ConnectURL(t, "http://"+p.Addr+path, nil, &mcp.ClientSessionOptions{ProtocolVersion: era})
			clients = append(clients, client{path + " " + era, echo, cs})
		}
	}
	// listed is the echo tool as c lists it (nil when not listed), and the
	// whole list as JSON.
	listed := func(c client) (*mcp.Tool, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := c.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("%s: tools/list: %v", c.name, err)
		}
		b, _ := json.Marshal(res)
		for _, tl := range res.Tools {
			if tl.Name == c.echo {
				return tl, string(b)
			}
		}
		return nil, string(b)
	}
	shows := func(tl *mcp.Tool, meta, icon string) bool {
		return tl != nil && tl.Meta["ui/resourceUri"] == meta && len(tl.Icons) == 1 && tl.Icons[0].Source == icon
	}
	for _, c := range clients {
		if tl, all := listed(c); !shows(tl, metaV1, iconV1) {
			t.Fatalf("%s: echo as first approved not listed with its _meta and icon: %s", c.name, all)
		}
	}

	for _, step := range []struct {
		field, meta, icon, fresh string
	}{
		{"_meta", metaV2, iconV1, metaV2},
		{"icons", metaV2, iconV2, iconV2},
	} {
		set(step.meta, step.icon)
		wardentest.WaitFor(t, 20*time.Second, "echo changed after its "+step.field+" changed", func() bool { return status() == "changed" })
		for _, c := range clients {
			tl, all := listed(c)
			if tl != nil || strings.Contains(all, step.fresh) {
				t.Errorf("%s: after a change of %s only, the unreviewed %s reached the client: %s", step.field, c.name, step.fresh, all)
			}
			res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.echo, Arguments: map[string]any{}})
			if err != nil {
				t.Fatalf("%s: call: %v", c.name, err)
			}
			wardentest.WantRefusal(t, res, "TOOL_CHANGED")
		}
		if code, out := cli("review", "s"); code != 3 || !strings.Contains(out, "changed: "+step.field) {
			t.Errorf("review s: exit %d, want 3 naming %s as what changed:\n%s", code, step.field, out)
		}
		if code, out := cli("review", "s", "--diff"); !strings.Contains(out, "+") || !strings.Contains(out, step.fresh) {
			t.Errorf("review s --diff: exit %d, want the new %s shown:\n%s", code, step.fresh, out)
		}
		if code, out := cli("review", "approve", "s", fixture.ToolEcho, "--yes"); code != 0 {
			t.Fatalf("review approve s echo: exit %d:\n%s", code, out)
		}
		for _, c := range clients {
			wardentest.WaitFor(t, 20*time.Second, c.name+": echo listed as approved", func() bool {
				tl, _ := listed(c)
				return shows(tl, step.meta, step.icon)
			})
		}
	}
}
