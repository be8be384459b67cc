package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/sessions"
)

func newSessionsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "sessions",
		Short: "List the persisted upstream HTTP sessions (never credentials)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --json prints the daemon's answer as it came.
			stored := func(c *client.Client) (json.RawMessage, error) { return c.Sessions(cmd.Context()) }
			return ask(g, stored, func(raw json.RawMessage) error {
				var infos []sessions.Info
				if err := json.Unmarshal(raw, &infos); err != nil {
					return fmt.Errorf("the daemon's list of sessions: %w", err)
				}
				if len(infos) == 0 {
					fmt.Fprintln(g.stdout, "no persisted sessions")
					return nil
				}
				t := newTable(g.stdout, "SERVER", "SESSION", "PROTOCOL", "MODE", "CREATED", "AGE")
				for _, s := range infos {
					age := ago(time.Duration(s.AgeSeconds * float64(time.Second)))
					t.row(s.Server, s.SessionPrefix, s.ProtocolVersion, s.Mode, stamp(s.Created), age)
				}
				t.flush()
				return nil
			})
		},
	}
}
