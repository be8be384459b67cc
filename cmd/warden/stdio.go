package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/wardenmcp/warden/bridge"
	"github.com/wardenmcp/warden/client"
)

func newStdioCmd(g *globals) *cobra.Command {
	var server, tokenEnv string
	cmd := &cobra.Command{
		Use:   "stdio [--server NAME] [--token-env VAR]",
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
			token, err := stdioToken(tokenEnv)
			if err != nil {
				return err
			}
			c := client.NewLocal(g.resolveStateDir())
			return (&bridge.Bridge{URL: url, Client: c.HTTPClient, Where: c.Where(), Token: token}).Run(cmd.Context(), os.Stdin, os.Stdout)
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "bridge to one server's endpoint (/mcp/NAME, names unchanged) instead of the aggregated /mcp")
	_ = cmd.RegisterFlagCompletionFunc("server", g.completeServerFlag)
	cmd.Flags().StringVar(&tokenEnv, "token-env", "", "send the bearer token in this environment variable (default: "+stdioTokenEnv+", if set), for a daemon whose config knows callers")
	return cmd
}

// stdioTokenEnv holds warden stdio's bearer token when --token-env does
// not name another variable. The token is read from the environment, never
// a flag: command lines are visible to every local user.
const stdioTokenEnv = "WARDEN_TOKEN"

// stdioToken is the token in the variable --token-env names (which must be
// set), else in WARDEN_TOKEN, else none.
func stdioToken(name string) (string, error) {
	if name == "" {
		return os.Getenv(stdioTokenEnv), nil
	}
	token, ok := os.LookupEnv(name)
	if !ok || token == "" {
		return "", usageErrorf("--token-env %s: the variable is not set; export it with the client's token", name)
	}
	return token, nil
}
