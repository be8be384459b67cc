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
		Use:   "tools SERVER",
		Short: "List a server's tools: class, review status and pinned hash",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			listed := func(c *client.Client) ([]api.Tool, error) { return c.Tools(cmd.Context(), args[0]) }
			return ask(g, listed, func(tools []api.Tool) error {
				if len(tools) == 0 {
					fmt.Fprintf(g.stdout, "%s has no tools (yet: see \"warden servers\" for its connection state)\n", args[0])
					return nil
				}
				sortTools(tools)
				t := newTable(g.stdout, "NAME", "CLASS", "STATUS", "HASH", "NOTE")
				held := 0
				for _, tool := range tools {
					var notes []string
					if tool.Status == approval.StatusChanged {
						notes = append(notes, "approved "+shortHash(tool.ApprovedHash))
					}
					if !tool.Present {
						notes = append(notes, "absent")
					} else if tool.Status == approval.StatusPending || tool.Status == approval.StatusChanged {
						held++
					}
					if tool.Hidden {
						notes = append(notes, "hidden by config")
					}
					t.row(tool.Name, tool.Class, string(tool.Status), shortHash(tool.CurrentHash), strings.Join(notes, ", "))
				}
				t.flush()
				if held > 0 {
					fmt.Fprintf(g.stdout, "\n%d tool(s) held; see what changed with: warden review %s\n", held, args[0])
				}
				return nil
			})
		},
	}
}

func sortTools(tools []api.Tool) {
	slices.SortFunc(tools, func(a, b api.Tool) int { return strings.Compare(a.Name, b.Name) })
}
