package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/guardrails"
)

func newToolsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "tools SERVER",
		Example:           "  warden tools memory",
		ValidArgsFunction: g.completeArgs(0, nil),
		Short:             "List a server's tools: class, review status and pinned hash",
		Long: `List a server's tools: class, review status and pinned hash. Exits 3 when
tools are pending or changed (held until reviewed).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var quarantined bool // said under the list (--json: each tool's server_quarantined says it)
			listed := func(c *client.Client) ([]api.Tool, error) {
				tools, err := c.Tools(cmd.Context(), args[0])
				if err != nil || g.jsonOut {
					return tools, err
				}
				s, err := c.Server(cmd.Context(), args[0])
				if err != nil {
					return nil, err
				}
				quarantined = s.Quarantined
				return tools, nil
			}
			return askHeld(g, listed, func(tools []api.Tool) error {
				printTools(g.stdout, args[0], tools)
				if quarantined {
					fmt.Fprintf(g.stdout, "\n%s is quarantined: none of its tools are listed to clients or run. Review them with: warden review %s; then admit it with: warden servers approve %s\n", args[0], args[0], args[0])
				}
				return nil
			}, func(tools []api.Tool) bool { return len(heldTools(tools)) > 0 })
		},
	}
}

// printTools writes server's tools as a table, and how many are held.
func printTools(w io.Writer, server string, tools []api.Tool) {
	if len(tools) == 0 {
		fmt.Fprintf(w, "%s has no tools (yet: see \"warden servers\" for its connection state)\n", server)
		return
	}
	sortTools(tools)
	t := newTable(w, "NAME", "CLASS", "STATUS", "HASH", "NOTE")
	for _, tool := range tools {
		var notes []string
		if tool.Status == approval.StatusChanged {
			notes = append(notes, "approved "+shortHash(tool.ApprovedHash))
		}
		if !tool.Present {
			notes = append(notes, "absent")
		}
		if tool.HeldBack {
			notes = append(notes, "held back")
		}
		if tool.Hidden {
			notes = append(notes, "hidden by config")
		}
		if rules := guardrails.HighRules(tool.Findings); len(rules) > 0 {
			notes = append(notes, "flagged: "+strings.Join(rules, ", "))
		}
		if tool.Invalid != "" {
			notes = append(notes, "never listed or callable: "+tool.Invalid)
		}
		t.row(tool.Name, classLabel(tool), string(tool.Status), shortHash(tool.CurrentHash), strings.Join(notes, ", "))
	}
	t.flush()
	if n := len(heldTools(tools)); n > 0 {
		fmt.Fprintf(w, "\n%d tool(s) held; see what changed with: warden review %s\n", n, server)
	}
}

func sortTools(tools []api.Tool) {
	slices.SortFunc(tools, func(a, b api.Tool) int { return strings.Compare(a.Name, b.Name) })
}
