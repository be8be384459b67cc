package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/wardenmcp/warden/bridge"
	"github.com/wardenmcp/warden/client"
)

func newStdioCmd(g *globals) *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "stdio [--server NAME]",
		Short: "Speak MCP on stdin/stdout, bridged to the running daemon (for clients that can only launch a command)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Only the daemon's state dir is needed: the bridge reaches it on
			// the state dir's socket, wherever it listens. A server's ${env:}
			// that this client's environment lacks is the daemon's business.
			url := "http://localhost/mcp"
			if server != "" {
				url += "/" + server
			}
			c := client.NewLocal(g.resolveStateDir())
			return (&bridge.Bridge{URL: url, Client: c.HTTPClient, Where: c.Where()}).Run(cmd.Context(), os.Stdin, os.Stdout)
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "bridge to one server's endpoint (/mcp/NAME, names unchanged) instead of the aggregated /mcp")
	_ = cmd.RegisterFlagCompletionFunc("server", g.completeServerFlag)
	return cmd
}
