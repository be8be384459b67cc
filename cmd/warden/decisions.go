package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/decisions"
	"github.com/wardenmcp/warden/internal/display"
)

func newDecisionsCmd(g *globals) *cobra.Command {
	var (
		server string
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "decisions [--server NAME] [--limit N]",
		Short: "Show operators' decisions: who admitted, approved, blocked, quarantined or cleared what",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usageErrorf("--limit must be 0 (no limit) or more")
			}
			recent := func(c *client.Client) ([]decisions.Decision, error) {
				return c.Decisions(cmd.Context(), server, limit)
			}
			return ask(g, recent, func(ds []decisions.Decision) error {
				if len(ds) == 0 {
					fmt.Fprintln(g.stdout, "no decisions recorded")
					return nil
				}
				t := newTable(g.stdout, "AT", "OPERATOR", "INSTANCE", "ACTION", "SERVER", "WHAT")
				for _, d := range ds {
					t.row(stamp(d.At), display.Escape(d.Operator), orDash(d.Instance), d.Action, d.Server, what(d))
				}
				t.flush()
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only decisions about this server")
	_ = cmd.RegisterFlagCompletionFunc("server", g.completeServerFlag)
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many decisions (default: the daemon's, 100)")
	return cmd
}

// what says what a decision did to which tools.
func what(d decisions.Decision) string {
	var parts []string
	if len(d.Approved) > 0 {
		parts = append(parts, "approved "+display.Escape(strings.Join(d.Approved, ",")))
	}
	if len(d.Blocked) > 0 {
		parts = append(parts, "blocked "+display.Escape(strings.Join(d.Blocked, ",")))
	}
	if d.Latches > 0 {
		parts = append(parts, strconv.Itoa(d.Latches)+" calls in doubt")
	}
	return orDash(strings.Join(parts, "; "))
}
