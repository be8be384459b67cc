package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
)

func newReviewCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review [SERVER]",
		Short: "Show pending and changed tools, with what changed since the approval",
		Long: `Show every pending or changed tool (of SERVER, or of every server) with a
diff of its approved definition against the current one: description,
inputSchema, annotations. Approve with "warden review approve", block with
"warden review block".`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return g.review(cmd.Context(), c, args)
		},
	}
	cmd.AddCommand(newReviewApproveCmd(g), newReviewBlockCmd(g))
	return cmd
}

// held reports whether a tool waits for review.
func held(t api.Tool) bool {
	return t.Present && (t.Status == approval.StatusPending || t.Status == approval.StatusChanged)
}

func heldTools(tools []api.Tool) []api.Tool {
	var out []api.Tool
	for _, t := range tools {
		if held(t) {
			out = append(out, t)
		}
	}
	sortTools(out)
	return out
}

func (g *globals) review(ctx context.Context, c *client.Client, args []string) error {
	var names []string
	quarantined := map[string]bool{}
	if len(args) == 1 {
		s, err := c.Server(ctx, args[0])
		if err != nil {
			return g.apiErr(err)
		}
		names, quarantined[s.Name] = []string{s.Name}, s.Quarantined
		if s.ConfigError != "" && !g.jsonOut {
			fmt.Fprintf(g.stdout, "%s: %s\n", s.Name, s.ConfigError)
		}
	} else {
		servers, err := c.Servers(ctx)
		if err != nil {
			return g.apiErr(err)
		}
		for _, s := range servers {
			if s.Tools.Pending+s.Tools.Changed > 0 {
				names = append(names, s.Name)
				quarantined[s.Name] = s.Quarantined
			}
		}
	}
	all := map[string][]api.Tool{}
	for _, name := range names {
		tools, err := c.Tools(ctx, name)
		if err != nil {
			return g.apiErr(err)
		}
		if h := heldTools(tools); len(h) > 0 {
			all[name] = h
		}
	}
	if g.jsonOut {
		if len(args) == 1 {
			return g.printJSON(append([]api.Tool{}, all[args[0]]...))
		}
		return g.printJSON(all)
	}
	if len(all) == 0 {
		if len(args) == 1 {
			fmt.Fprintf(g.stdout, "%s: nothing to review, no pending or changed tools\n", args[0])
		} else {
			fmt.Fprintln(g.stdout, "nothing to review: no pending or changed tools")
		}
		return nil
	}
	for _, name := range names {
		tools := all[name]
		if len(tools) == 0 {
			continue
		}
		fmt.Fprintf(g.stdout, "== %s: %d tool(s) to review\n", name, len(tools))
		if quarantined[name] {
			fmt.Fprintf(g.stdout, "   the server is quarantined: after reviewing, admit it with \"warden servers approve %s\"\n", name)
		}
		for _, t := range tools {
			fmt.Fprintln(g.stdout)
			if err := writeToolReview(g.stdout, name, t); err != nil {
				return err
			}
		}
		fmt.Fprintln(g.stdout)
		fmt.Fprintf(g.stdout, "approve: warden review approve %s --all   (or name the tools; --except T,... leaves some held)\n", name)
		fmt.Fprintf(g.stdout, "block:   warden review block %s TOOL...\n\n", name)
	}
	return nil
}

// writeToolReview writes one held tool's header and definition diff.
func writeToolReview(w io.Writer, server string, t api.Tool) error {
	fmt.Fprintf(w, "%s  %s/%s  class %s\n", t.Status, server, t.Name, t.Class)
	if t.Status == approval.StatusChanged && len(t.Approved) > 0 {
		by := t.ApprovedBy
		if !t.ApprovedAt.IsZero() {
			by += ", " + stamp(t.ApprovedAt)
		}
		fmt.Fprintf(w, "--- approved %s (%s)\n", t.ApprovedHash, by)
		fmt.Fprintf(w, "+++ current  %s\n", t.CurrentHash)
	} else {
		fmt.Fprintf(w, "+++ current  %s (never approved)\n", t.CurrentHash)
	}
	n, err := writeDefinitionDiff(w, t.Approved, t.Current)
	if err != nil {
		return fmt.Errorf("%s/%s: %w", server, t.Name, err)
	}
	if n == 0 {
		fmt.Fprintln(w, "(the daemon sent no definition to compare)")
	}
	return nil
}

func newReviewApproveCmd(g *globals) *cobra.Command {
	var (
		all, yes, force bool
		except          []string
	)
	cmd := &cobra.Command{
		Use:   "approve SERVER [TOOL...] [--all] [--except T,...] [--yes] [--force]",
		Short: "Approve reviewed tools as they are now",
		Long: `Approve tools of SERVER: the named ones, or with --all every pending and
changed tool except the --except ones. Shows what will be approved and asks
for confirmation unless --yes. The approval is bound to the definitions
shown: if one changed since, nothing is approved (unless --force). Exits 3
when tools of SERVER are still pending or changed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, named := args[0], dedupe(args[1:])
			switch {
			case all && len(named) > 0:
				return usageErrorf("give either tool names or --all, not both")
			case !all && len(named) == 0:
				return usageErrorf("name the tools to approve, or give --all")
			case !all && len(except) > 0:
				return usageErrorf("--except only applies with --all")
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			tools, err := c.Tools(ctx, server)
			if err != nil {
				return g.apiErr(err)
			}
			byName := map[string]api.Tool{}
			for _, t := range tools {
				byName[t.Name] = t
			}
			if unknown := missing(byName, append(slices.Clone(named), except...)); len(unknown) > 0 {
				return fmt.Errorf("%s has no tool %s; nothing was changed; list its tools with \"warden tools %s\"", server, strings.Join(unknown, ", "), server)
			}
			var sel, left []api.Tool
			if all {
				for _, t := range heldTools(tools) {
					if slices.Contains(except, t.Name) {
						left = append(left, t)
					} else {
						sel = append(sel, t)
					}
				}
			} else {
				for _, n := range named {
					sel = append(sel, byName[n])
				}
			}
			plan := g.stdout
			if g.jsonOut {
				plan = g.stderr
			}
			if len(sel) == 0 {
				fmt.Fprintf(plan, "%s: nothing to approve\n", server)
				return g.warnHeld(server, &approval.Answer{StillPending: len(left), HeldTools: names(left)})
			}
			writePlan(plan, server, sel, left)
			if !yes {
				ok, err := confirm(g.stdin, g.stderr, fmt.Sprintf("Approve %d tool(s) of %s as shown? [y/N] ", len(sel), server))
				if err != nil {
					return err
				}
				if !ok {
					return errors.New("not confirmed; nothing was approved (to approve without the question, as in a script: add --yes)")
				}
			}
			req := approval.ToolApproval{All: all, Except: except}
			if !all {
				req.Tools = named
			}
			if !force {
				req.ExpectedHashes = map[string]string{}
				for _, t := range sel {
					req.ExpectedHashes[t.Name] = t.CurrentHash
				}
			}
			ans, err := c.ApproveTools(ctx, server, req)
			if err != nil {
				return g.mismatchErr(server, err)
			}
			herr := g.reportAnswer(server, ans)
			if s, err := c.Server(ctx, server); err == nil && s.Quarantined && !g.jsonOut {
				fmt.Fprintf(g.stdout, "note: %s is quarantined; its tools stay hidden until: warden servers approve %s\n", server, server)
			}
			return herr
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "approve every pending and changed tool")
	f.StringSliceVar(&except, "except", nil, "with --all: tools to leave held (comma-separated)")
	f.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	f.BoolVar(&force, "force", false, "approve even definitions that changed after they were shown")
	return cmd
}

// writePlan shows what an approval will do.
func writePlan(w io.Writer, server string, sel, left []api.Tool) {
	fmt.Fprintf(w, "about to approve %d tool(s) of %s:\n", len(sel), server)
	t := newTable(w, "  STATUS", "TOOL", "CLASS", "HASH")
	for _, tool := range sel {
		status := string(tool.Status)
		switch {
		case tool.Status == approval.StatusBlocked:
			status += " (approving unblocks it)"
		case tool.Status == approval.StatusApproved:
			status += " (already)"
		case !tool.Present:
			status += " (absent)"
		}
		t.row("  "+status, tool.Name, tool.Class, shortHash(tool.CurrentHash))
	}
	t.flush()
	if len(left) > 0 {
		fmt.Fprintf(w, "left held: %s\n", strings.Join(names(left), ", "))
	}
}

// confirm asks a yes/no question; only "y" or "yes" is yes.
func confirm(in io.Reader, out io.Writer, question string) (bool, error) {
	fmt.Fprint(out, question)
	if in == nil {
		return false, nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	if errors.Is(err, io.EOF) && line == "" {
		fmt.Fprintln(out)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// mismatchErr explains a 409 hash_mismatch: nothing was approved and the
// operator must review again.
func (g *globals) mismatchErr(server string, err error) error {
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Code != "hash_mismatch" {
		return g.apiErr(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tool definitions of %s changed after they were shown; nothing was approved", server)
	for _, m := range ae.Mismatches() {
		switch {
		case m.Current == "":
			fmt.Fprintf(&b, "\n  %s: gone", m.Tool)
		case m.Expected == "":
			fmt.Fprintf(&b, "\n  %s: not in the review (now %s)", m.Tool, shortHash(m.Current))
		default:
			fmt.Fprintf(&b, "\n  %s: shown %s, now %s", m.Tool, shortHash(m.Expected), shortHash(m.Current))
		}
	}
	fmt.Fprintf(&b, "\nrun \"warden review %s\" again and approve what it shows", server)
	return errors.New(b.String())
}

func newReviewBlockCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "block SERVER TOOL...",
		Short: "Block tools: hidden and refused whatever their definition, until approved by name",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			ans, err := c.BlockTools(cmd.Context(), args[0], dedupe(args[1:]))
			if err != nil {
				return g.apiErr(err)
			}
			return g.reportAnswer(args[0], ans)
		},
	}
}

func missing(known map[string]api.Tool, names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := known[n]; !ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func names(tools []api.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
