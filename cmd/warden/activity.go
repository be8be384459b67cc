package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/activity"
	"github.com/wardenmcp/warden/client"
)

func newActivityCmd(g *globals) *cobra.Command {
	var (
		server, user string
		limit        int
	)
	cmd := &cobra.Command{
		Use:   "activity [--server NAME] [--user NAME] [--limit N]",
		Short: "Show recent tool calls (never their arguments; what an error said, credentials masked)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageErrorf("--limit must be 0 (no limit) or more")
			}
			recent := func(c *client.Client) ([]activity.Entry, error) {
				return c.Activity(cmd.Context(), activity.Filter{Server: server, User: user}, limit)
			}
			return ask(g, recent, func(entries []activity.Entry) error {
				if len(entries) == 0 {
					fmt.Fprintln(g.stdout, "no tool calls recorded")
					return nil
				}
				t := newTable(g.stdout, "AT", "SURFACE", "USER", "SERVER", "TOOL", "CLASS", "OUTCOME", "LATENCY", "ERROR")
				for _, e := range entries {
					outcome := e.Outcome
					if e.Code != "" {
						outcome += " " + e.Code
					}
					if e.Task {
						outcome += " (task)"
					}
					lat := (time.Duration(e.LatencyMicros) * time.Microsecond).String()
					// What an error said, on one line and shortened: --json has it whole.
					t.row(stamp(e.At), e.Surface, orDash(e.User), e.Server, e.Tool, e.Class, outcome, lat, truncate(strings.Join(strings.Fields(e.Error), " "), 101))
				}
				t.flush()
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only calls to this server")
	_ = cmd.RegisterFlagCompletionFunc("server", g.completeServerFlag)
	cmd.Flags().StringVar(&user, "user", "", "only calls by this caller (a user, or a client of the config's \"clients\")")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many calls (default: the daemon's, 100)")
	return cmd
}
