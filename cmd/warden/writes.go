package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/display"
	"github.com/wardenmcp/warden/writes"
)

func newWritesCmd(g *globals) *cobra.Command {
	list := func(cmd *cobra.Command, _ []string) error {
		latched := func(c *client.Client) ([]writes.Latch, error) { return c.Writes(cmd.Context()) }
		return askHeld(g, latched, func(latches []writes.Latch) error {
			if len(latches) == 0 {
				fmt.Fprintln(g.stdout, "no latched writes")
				return nil
			}
			t := newTable(g.stdout, "SERVER", "TOOL", "REASON", "SURFACE", "AT", "ARGS_SHA256")
			for _, l := range latches {
				t.row(l.Server, l.Tool, string(l.Reason), l.Surface, stamp(l.At), shortHash(l.ArgsSHA256))
			}
			t.flush()
			fmt.Fprintln(g.stdout, "\nwrites to these servers are refused: the outcome of each call above is unknown.")
			fmt.Fprintln(g.stdout, "check upstream whether each happened, then allow writes again with: warden writes clear SERVER")
			return nil
		}, func(latches []writes.Latch) bool { return len(latches) > 0 })
	}
	cmd := &cobra.Command{
		Use:   "writes",
		Short: "List servers whose writes are latched after a call with an unknown outcome; clear a latch",
		Long: `List servers whose writes are latched after a call with an unknown outcome
(exit status 3 when any is), or clear a server's latch.`,
		RunE: list,
	}
	cmd.AddCommand(
		&cobra.Command{Use: "list", Short: "List latched servers (exit status 3 when any is)", Args: cobra.NoArgs, RunE: list},
		&cobra.Command{
			Use:               "clear SERVER",
			ValidArgsFunction: g.completeArgs(0, nil),
			Short:             "Allow writes to SERVER again (check upstream first whether the latched call happened)",
			Args:              cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				clear := func(c *client.Client) (*client.Cleared, error) { return c.ClearWrites(cmd.Context(), args[0]) }
				return ask(g, clear, func(res *client.Cleared) error {
					if !res.Cleared || res.Latch == nil {
						fmt.Fprintf(g.stdout, "%s had no latched writes; nothing to clear\n", args[0])
						return nil
					}
					ls := res.Latches
					if len(ls) == 0 { // a daemon of an earlier version answers the first only
						ls = []writes.Latch{*res.Latch}
					}
					fmt.Fprintf(g.stdout, "cleared %s: writes are allowed again; the latch of %d call(s) of unknown outcome is gone:\n", args[0], len(ls))
					for _, l := range ls {
						fmt.Fprintf(g.stdout, "  %s (%s, %s via %s, args %s)\n", display.Escape(l.Tool), l.Reason, stamp(l.At), l.Surface, shortHash(l.ArgsSHA256))
					}
					return nil
				})
			},
		},
	)
	return cmd
}
