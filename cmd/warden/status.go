package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the daemon's version, uptime and each server's state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			st, err := c.Status(cmd.Context())
			if err != nil {
				return g.apiErr(err)
			}
			if g.jsonOut {
				return g.printJSON(st)
			}
			up := time.Duration(st.UptimeSeconds * float64(time.Second))
			fmt.Fprintf(g.stdout, "warden %s at %s, up %s\n", st.Version, baseURL(st.Listen), ago(up))
			fmt.Fprintf(g.stdout, "config %s\n", st.ConfigPath)
			printReloadError(g, st.ReloadError)
			if len(st.Servers) == 0 {
				fmt.Fprintln(g.stdout, "no servers; add one with: warden servers add NAME --url URL  (or: -- COMMAND ARGS...)")
				return nil
			}
			fmt.Fprintln(g.stdout)
			printServers(g, st.Servers)
			fmt.Fprintf(g.stdout, "\ntool definitions cost about %d tokens on /mcp, %d on /mcp?view=search (estimate: bytes of JSON / 4)\n",
				st.ViewTokens["all"], st.ViewTokens["search"])
			return nil
		},
	}
}
