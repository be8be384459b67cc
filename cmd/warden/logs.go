package main

import (
	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/display"
)

func newLogsCmd(g *globals) *cobra.Command {
	var (
		follow bool
		lines  int
	)
	cmd := &cobra.Command{
		Use: "logs SERVER [-f] [-n LINES]",
		Example: `  warden logs memory
  warden logs memory -f`,
		Short: "Show a stdio server's stderr log (secrets masked); -f follows it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lines < 0 {
				return usageErrorf("-n %d: give a number of lines, or 0 for the whole log", lines)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			// Through the daemon, which masks secrets and knows where the
			// log is: the CLI needs no access to the state dir's logs. The
			// server wrote it: escaped, it cannot drive the terminal.
			if err := c.Logs(cmd.Context(), args[0], lines, follow, display.Writer(g.stdout)); err != nil {
				return g.apiErr(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what the server writes, until interrupted")
	cmd.Flags().IntVarP(&lines, "lines", "n", api.DefaultLogLines, "how many of the last lines to print first (0: the whole log)")
	return cmd
}
