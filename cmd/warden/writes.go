package main

import (
	"fmt"
	"io"
	"strings"

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
			for i, l := range latches {
				if i == 0 || l.Server != latches[i-1].Server {
					fmt.Fprintf(g.stdout, "%s:\n", display.Escape(l.Server))
				}
				printLatch(g.stdout, l)
			}
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
		newWritesClearCmd(g),
	)
	return cmd
}

// newWritesClearCmd clears a server's latch after showing the calls in
// doubt and asking, as approvals do: clearing says their outcome was
// checked upstream.
func newWritesClearCmd(g *globals) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:               "clear SERVER [--yes]",
		Example:           "  warden writes clear memory",
		ValidArgsFunction: g.completeArgs(0, nil),
		Short:             "Allow writes to SERVER again (check upstream first whether the latched calls happened)",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server := args[0]
			c, err := g.client()
			if err != nil {
				return err
			}
			if _, err := c.Server(cmd.Context(), server); err != nil {
				return g.apiErr(err)
			}
			all, err := c.Writes(cmd.Context())
			if err != nil {
				return g.apiErr(err)
			}
			var latched []writes.Latch
			for _, l := range all {
				if l.Server == server {
					latched = append(latched, l)
				}
			}
			if len(latched) == 0 {
				fmt.Fprintf(g.stdout, "%s had no latched writes; nothing to clear\n", server)
				return nil
			}
			if !yes {
				fmt.Fprintf(g.stderr, "writes to %s are latched; the outcome of these calls is unknown:\n", server)
				printLatches(g.stderr, latched)
				if err := g.confirmPlan(false, "checked upstream whether each happened? clear the latch", "the latch stays"); err != nil {
					return err
				}
			}
			clear := func(c *client.Client) (*client.Cleared, error) { return c.ClearWrites(cmd.Context(), server) }
			return ask(g, clear, func(res *client.Cleared) error {
				if !res.Cleared || res.Latch == nil {
					fmt.Fprintf(g.stdout, "%s had no latched writes; nothing to clear\n", server)
					return nil
				}
				ls := res.Latches
				if len(ls) == 0 { // a daemon of an earlier version answers the first only
					ls = []writes.Latch{*res.Latch}
				}
				fmt.Fprintf(g.stdout, "cleared %s: writes are allowed again; the latch of %d call(s) of unknown outcome is gone:\n", server, len(ls))
				printLatches(g.stdout, ls)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "clear without asking (for scripts)")
	return cmd
}

// printLatches lists calls in doubt, a line each, and under it what finds
// the call upstream: when it was sent, by which client, with which
// arguments (their values only where the config records them). Records of
// earlier versions have only the first line.
func printLatches(w io.Writer, ls []writes.Latch) {
	for _, l := range ls {
		printLatch(w, l)
	}
}

func printLatch(w io.Writer, l writes.Latch) {
	fmt.Fprintf(w, "  %s (%s, %s via %s, args %s)\n", display.Escape(l.Tool), l.Reason, stamp(l.At), display.Escape(l.Surface), shortHash(l.ArgsSHA256))
	if !l.SentAt.IsZero() {
		fmt.Fprintf(w, "    sent %s%s\n", stamp(l.SentAt), byClient(l.Client))
	}
	if len(l.Args) > 0 {
		fmt.Fprintf(w, "    arguments: %s\n", argsLine(l))
	}
}

// byClient says which client made a call: " by NAME VERSION (session ID)",
// "" when none is known.
func byClient(c writes.Caller) string {
	var out string
	if name := strings.TrimSpace(c.Name + " " + c.Version); name != "" {
		out = " by " + display.Escape(name)
	}
	if c.Session != "" {
		out += " (session " + display.Escape(c.Session) + ")"
	}
	return out
}

// argsLine lists a call's arguments: each one's name and size, and its
// value when recorded (shortened here; --json shows what was kept).
func argsLine(l writes.Latch) string {
	parts := make([]string, 0, len(l.Args)+1)
	for _, a := range l.Args {
		p := fmt.Sprintf("%s %d bytes", display.Escape(a.Name), a.Bytes)
		if a.Value != "" {
			v := truncate(a.Value, 60)
			if a.ValueCut && v == a.Value {
				v += "…"
			}
			p += " = " + display.Escape(v)
		}
		parts = append(parts, p)
	}
	if l.ArgsOmitted > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", l.ArgsOmitted))
	}
	return strings.Join(parts, "; ")
}
