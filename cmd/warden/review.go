package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/guardrails"
	"github.com/wardenmcp/warden/internal/display"
)

func newReviewCmd(g *globals) *cobra.Command {
	var diff bool
	cmd := &cobra.Command{
		Use:               "review [SERVER] [--diff]",
		ValidArgsFunction: g.completeArgs(0, nil),
		Short:             "Show pending and changed tools and what changed since the approval",
		Long: `Show every pending or changed tool (of SERVER, or of every server), one line
each: its class and which fields of its definition changed since it was
approved. Tools with a high-severity guardrails finding come first, and
every tool's findings are shown under it, the words that raised them quoted
(approving all passes over a flagged tool: name it, or add --force). With
--diff, show each definition in full as a diff of the approved one against
the current one: description, inputSchema, annotations. Approve with
"warden review approve", block with "warden review block". Exits 3 when
there is something to review.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			return g.review(cmd.Context(), c, args, diff)
		},
	}
	cmd.Flags().BoolVar(&diff, "diff", false, "show each tool's definition as a diff against the approved one")
	cmd.AddCommand(newReviewApproveCmd(g), newReviewBlockCmd(g))
	return cmd
}

func heldTools(tools []api.Tool) []api.Tool {
	return pick(tools, api.Waiting)
}

// invalidTools are the present tools held as invalid: their names are
// outside the MCP character set, so no approval lists them.
func invalidTools(tools []api.Tool) []api.Tool {
	return pick(tools, func(t api.Tool) bool { return t.Present && t.Status == approval.StatusInvalid })
}

func pick(tools []api.Tool, keep func(api.Tool) bool) []api.Tool {
	var out []api.Tool
	for _, t := range tools {
		if keep(t) {
			out = append(out, t)
		}
	}
	sortTools(out)
	return out
}

// writeInvalid says which tools are held as invalid, and why; these are
// never listed or callable, and no approval changes that.
func writeInvalid(w io.Writer, server string, tools []api.Tool) {
	if len(tools) == 0 {
		return
	}
	fmt.Fprintf(w, "%s: %d tool(s) held as invalid: never listed or callable, and no approval changes that; the server's author must rename them (or remove the server: warden servers remove %s)\n", server, len(tools), server)
	tab := newTable(w)
	for _, t := range tools {
		tab.row("   invalid", t.Name, t.Invalid)
	}
	tab.flush()
}

func (g *globals) review(ctx context.Context, c *client.Client, args []string, diff bool) error {
	var names []string
	quarantined := map[string]bool{}
	if len(args) == 1 {
		s, err := c.Server(ctx, args[0])
		if err != nil {
			return g.apiErr(err)
		}
		names, quarantined[s.Name] = []string{s.Name}, s.Quarantined
		if s.ConfigError != "" && !g.jsonOut {
			fmt.Fprintf(g.stdout, "%s: %s\n", s.Name, display.Text(s.ConfigError))
		}
	} else {
		servers, err := c.Servers(ctx)
		if err != nil {
			return g.apiErr(err)
		}
		for _, s := range servers {
			if s.Tools.Pending+s.Tools.Changed+s.Tools.Invalid > 0 {
				names = append(names, s.Name)
				quarantined[s.Name] = s.Quarantined
			}
		}
	}
	all, invalid := map[string][]api.Tool{}, map[string][]api.Tool{}
	for _, name := range names {
		tools, err := c.Tools(ctx, name)
		if err != nil {
			return g.apiErr(err)
		}
		if h := heldTools(tools); len(h) > 0 {
			flaggedFirst(h)
			all[name] = h
		}
		if bad := invalidTools(tools); len(bad) > 0 {
			invalid[name] = bad
		}
	}
	var held error
	if len(all) > 0 {
		held = errHeld
	}
	if g.jsonOut {
		shown := map[string][]api.Tool{}
		for _, name := range names {
			if t := append(all[name], invalid[name]...); len(t) > 0 {
				shown[name] = t
			}
		}
		var err error
		if len(args) == 1 {
			err = g.printJSON(append([]api.Tool{}, shown[args[0]]...))
		} else {
			err = g.printJSON(shown)
		}
		return cmp.Or(err, held)
	}
	for _, name := range names {
		writeInvalid(g.stdout, name, invalid[name])
	}
	if len(all) == 0 {
		if len(args) == 1 {
			fmt.Fprintf(g.stdout, "%s: nothing to review, no pending or changed tools\n", args[0])
		} else {
			fmt.Fprintln(g.stdout, "nothing to review: no pending or changed tools")
		}
		return nil
	}
	if len(all) > 1 {
		n := 0
		for _, tools := range all {
			n += len(tools)
		}
		fmt.Fprintf(g.stdout, "%d tool(s) to review on %d servers\n\n", n, len(all))
	}
	for _, name := range names {
		tools := all[name]
		if len(tools) == 0 {
			continue
		}
		counts := approval.Counts{}
		for _, t := range tools {
			if t.Status == approval.StatusChanged {
				counts.Changed++
			} else {
				counts.Pending++
			}
		}
		fmt.Fprintf(g.stdout, "== %s: %d tool(s) to review (%s)\n", name, len(tools), toolCounts(counts))
		if quarantined[name] {
			fmt.Fprintf(g.stdout, "   the server is quarantined: after reviewing, admit it with \"warden servers approve %s\"\n", name)
		}
		var err error
		if diff {
			err = g.writeServerDiff(name, tools)
		} else {
			err = g.writeServerSummary(name, tools)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(g.stdout, "approve: warden review approve %s --all   (or name the tools; --except T,... leaves some held)\n", name)
		if n := len(pick(tools, api.Flagged)); n > 0 {
			fmt.Fprintf(g.stdout, "         --all leaves the %d tool(s) with a high-severity finding pending: name them, or add --force\n", n)
		}
		fmt.Fprintf(g.stdout, "block:   warden review block %s TOOL...\n\n", name)
	}
	return held
}

// writeServerSummary writes one line per held tool of a server: status,
// name, class and what changed.
func (g *globals) writeServerSummary(server string, tools []api.Tool) error {
	tab := newTable(g.stdout)
	for _, t := range tools {
		what, err := changeSummary(t.Approved, t.Current)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", server, display.Escape(t.Name), err)
		}
		if t.HeldBack {
			what += "; held back earlier"
			if !t.HeldBackAt.IsZero() {
				what += " (" + stamp(t.HeldBackAt) + ")"
			}
		}
		tab.row("   "+string(t.Status), t.Name, classLabel(t), what)
		for _, f := range t.Findings {
			tab.row("", "", "", findingText(f))
		}
		if t.Reason != "" {
			tab.row("", "", "", "held: "+t.Reason)
		}
	}
	tab.flush()
	fmt.Fprintf(g.stdout, "\nthe definitions and what changed in them: warden review %s --diff\n", server)
	return nil
}

// writeServerDiff writes every held tool of a server with its definition
// diff.
func (g *globals) writeServerDiff(server string, tools []api.Tool) error {
	for _, t := range tools {
		fmt.Fprintln(g.stdout)
		if err := writeToolReview(g.stdout, server, t); err != nil {
			return err
		}
	}
	fmt.Fprintln(g.stdout)
	return nil
}

// writeToolReview writes one held tool's header and definition diff.
func writeToolReview(w io.Writer, server string, t api.Tool) error {
	fmt.Fprintf(w, "%s  %s/%s  class %s\n", t.Status, server, display.Escape(t.Name), classLabel(t))
	for _, f := range t.Findings {
		fmt.Fprintln(w, display.Escape(findingText(f)))
	}
	if t.Reason != "" {
		fmt.Fprintln(w, "held: "+display.Escape(t.Reason))
	}
	if t.Status == approval.StatusChanged && len(t.Approved) > 0 {
		by := t.ApprovedBy
		if t.DecidedBy != "" {
			by += " " + display.Escape(t.DecidedBy)
		}
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
		return fmt.Errorf("%s/%s: %w", server, display.Escape(t.Name), err)
	}
	if n == 0 {
		fmt.Fprintln(w, "(the daemon sent no definition to compare)")
	}
	return nil
}

// findingText is one guardrails finding on a line, the words that raised it
// quoted; not escaped (callers escape: the words are a server's).
func findingText(f guardrails.Finding) string {
	return fmt.Sprintf("!!! %s %s in %s: %s", f.Severity, f.Rule, f.Field, strconv.Quote(f.Excerpt))
}

// flaggedFirst puts the tools with a high-severity finding first, keeping
// the order within each part: a reviewer reads them before the rest.
func flaggedFirst(tools []api.Tool) {
	slices.SortStableFunc(tools, func(a, b api.Tool) int {
		fa, fb := api.Flagged(a), api.Flagged(b)
		switch {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		}
		return 0
	})
}

func newReviewApproveCmd(g *globals) *cobra.Command {
	var (
		all, yes, force bool
		except          []string
	)
	cmd := &cobra.Command{
		Use: "approve SERVER [TOOL...] [--all] [--except T,...] [--yes] [--force]",
		Example: `  warden review approve memory create_entities read_graph
  warden review approve memory --all --except delete_entities`,
		Short: "Approve reviewed tools as they are now",
		Long: `Approve tools of SERVER: the named ones, or with --all every pending and
changed tool except the --except ones and those with a high-severity
guardrails finding (see "warden review SERVER"), which stay pending: name
them, or add --force. Shows what will be approved and asks for
confirmation unless --yes. The approval is bound to the definitions shown:
if one changed since, nothing is approved (unless --force). --force is the
one override of both checks. Exits 3 when tools of SERVER are still pending
or changed.`,
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
			tools, err := c.ToolStates(ctx, server)
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
			var sel, left, flagged []api.Tool
			if all {
				for _, t := range heldTools(tools) {
					switch {
					case slices.Contains(except, t.Name) || t.HeldBack:
						left = append(left, t)
					case api.Flagged(t) && !force:
						flagged = append(flagged, t)
					default:
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
				writeFlagged(plan, server, flagged)
				writeInvalid(plan, server, invalidTools(tools))
				held := append(left, flagged...)
				return g.warnHeld(server, &approval.Answer{StillPending: len(held), HeldTools: names(held)})
			}
			writePlan(plan, fmt.Sprintf("about to approve %d tool(s) of %s:", len(sel), server), sel)
			writeLeft(plan, server, left)
			writeFlagged(plan, server, flagged)
			writeInvalid(plan, server, invalidTools(tools))
			if err := g.confirmPlan(yes, fmt.Sprintf("Approve %d tool(s) of %s as shown?", len(sel), server), "nothing was approved"); err != nil {
				return err
			}
			req := approval.ToolApproval{All: all, Except: except, Force: force}
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
			if ans.Quarantined && !g.jsonOut {
				fmt.Fprintf(g.stdout, "note: %s is quarantined; its tools stay hidden until you admit it with: warden servers approve %s", server, server)
				switch len(left) {
				case 0:
				case 1:
					fmt.Fprintf(g.stdout, " (%s stays held)", display.Escape(left[0].Name))
				default:
					fmt.Fprintf(g.stdout, " (%s stay held)", shownNames(names(left)))
				}
				fmt.Fprintln(g.stdout)
			}
			return herr
		},
	}
	f := cmd.Flags()
	f.BoolVar(&all, "all", false, "approve every pending and changed tool")
	f.StringSliceVar(&except, "except", nil, "with --all: tools to leave held (comma-separated)")
	f.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	f.BoolVar(&force, "force", false, "approve even definitions that changed after they were shown, and with --all tools with a high-severity finding")
	cmd.ValidArgsFunction = g.completeArgs(math.MaxInt, api.Waiting)
	_ = cmd.RegisterFlagCompletionFunc("except", g.completeFlagTools(api.Waiting))
	return cmd
}

// writePlan shows, under header, the tools an approval will approve.
func writePlan(w io.Writer, header string, sel []api.Tool) {
	fmt.Fprintln(w, header)
	if len(sel) == 0 {
		return
	}
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
		case tool.HeldBack:
			status += " (held back earlier)"
		}
		t.row("  "+status, tool.Name, classLabel(tool), shortHash(tool.CurrentHash))
	}
	t.flush()
}

// writeLeft names the tools an approval leaves held: those excepted now,
// and those held back earlier, which only naming them approves.
func writeLeft(w io.Writer, server string, left []api.Tool) {
	var now, earlier []string
	for _, t := range left {
		if t.HeldBack {
			earlier = append(earlier, t.Name)
		} else {
			now = append(now, t.Name)
		}
	}
	if len(now) > 0 {
		fmt.Fprintf(w, "left held: %s\n", shownNames(now))
	}
	if len(earlier) > 0 {
		fmt.Fprintf(w, "left held, as held back earlier: %s (to approve one, name it: warden review approve %s TOOL)\n",
			shownNames(earlier), server)
	}
}

// writeFlagged names the tools approving all leaves pending for a
// high-severity guardrails finding, and the commands that approve them.
func writeFlagged(w io.Writer, server string, flagged []api.Tool) {
	if len(flagged) == 0 {
		return
	}
	fmt.Fprintf(w, "left pending, with a high-severity finding: %s (see why: warden review %s; approve one by name: warden review approve %s TOOL; or all: warden review approve %s --all --force)\n",
		shownNames(names(flagged)), server, server, server)
}

// confirmPlan asks whether to go ahead with the plan just shown, unless
// yes (--yes); a no ends the command saying what was not done.
func (g *globals) confirmPlan(yes bool, question, notDone string) error {
	if yes {
		return nil
	}
	ok, err := confirm(g.stdin, g.stderr, question+" [y/N] ")
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("not confirmed; %s (to go ahead without the question, as in a script: add --yes)", notDone)
	}
	return nil
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
		m.Tool = display.Escape(m.Tool)
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
		Use:               "block SERVER TOOL...",
		Example:           "  warden review block memory delete_entities",
		ValidArgsFunction: g.completeArgs(math.MaxInt, presentTool),
		Short:             "Block tools: hidden and refused whatever their definition, until approved by name",
		Args:              cobra.MinimumNArgs(2),
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
