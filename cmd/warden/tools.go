package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
)

func newToolsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "tools SERVER",
		ValidArgsFunction: g.completeArgs(0, nil),
		Short:             "List a server's tools: class, review status and pinned hash",
		Long: `List a server's tools: class, review status and pinned hash. Exits 3 when
tools are pending or changed (held until reviewed).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			listed := func(c *client.Client) ([]api.Tool, error) { return c.Tools(cmd.Context(), args[0]) }
			return askHeld(g, listed, func(tools []api.Tool) error {
				if len(tools) == 0 {
					fmt.Fprintf(g.stdout, "%s has no tools (yet: see \"warden servers\" for its connection state)\n", args[0])
					return nil
				}
				sortTools(tools)
				t := newTable(g.stdout, "NAME", "CLASS", "STATUS", "HASH", "NOTE")
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
					if tool.Invalid != "" {
						notes = append(notes, "never listed or callable: "+tool.Invalid)
					}
					t.row(tool.Name, classLabel(tool), string(tool.Status), shortHash(tool.CurrentHash), strings.Join(notes, ", "))
				}
				t.flush()
				if n := len(heldTools(tools)); n > 0 {
					fmt.Fprintf(g.stdout, "\n%d tool(s) held; see what changed with: warden review %s\n", n, args[0])
				}
				return nil
			}, func(tools []api.Tool) bool { return len(heldTools(tools)) > 0 })
		},
	}
}

func sortTools(tools []api.Tool) {
	slices.SortFunc(tools, func(a, b api.Tool) int { return strings.Compare(a.Name, b.Name) })
}
