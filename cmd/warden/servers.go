package main

import (
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/internal/display"
)

func newServersCmd(g *globals) *cobra.Command {
	list := func(cmd *cobra.Command, _ []string) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		st, err := c.Status(cmd.Context()) // the servers, and why a reload was refused
		if err != nil {
			return g.apiErr(err)
		}
		if g.jsonOut {
			return g.printJSON(st.Servers)
		}
		printReloadError(g, st.ReloadError)
		if len(st.Servers) == 0 {
			fmt.Fprintln(g.stdout, "no servers; add one with: warden servers add NAME --url URL  (or: -- COMMAND ARGS...)")
			return nil
		}
		printServers(g, st.Servers)
		return nil
	}
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "List, add, remove, approve and quarantine upstream servers",
		RunE:  list,
	}
	cmd.AddCommand(
		&cobra.Command{Use: "list", Short: "List the configured servers and their state", Args: cobra.NoArgs, RunE: list},
		newServersAddCmd(g),
		newServersRemoveCmd(g),
		newServersApproveCmd(g),
		newServersQuarantineCmd(g),
	)
	return cmd
}

// printReloadError says that the daemon refused the file as it is now.
func printReloadError(g *globals, reloadErr string) {
	if reloadErr != "" {
		fmt.Fprintf(g.stdout, "last reload refused, still running the previous config: %s\n\n", display.Text(reloadErr))
	}
}

// printServers writes the servers table, then each server's config or
// connection error.
func printServers(g *globals, servers []api.Server) {
	t := newTable(g.stdout, "NAME", "TRANSPORT", "STATE", "ACCESS", "TOOLS", "TARGET")
	for _, s := range servers {
		access := "admitted"
		switch {
		case s.ConfigError != "" && s.Transport == "":
			access = "not loaded"
		case s.Disabled:
			access = "disabled"
		case s.Quarantined:
			access = "quarantined"
		case s.Trusted:
			access = "trusted"
		}
		t.row(s.Name, s.Transport, s.State.State, access, toolCounts(s.Tools), truncate(s.Target, 60))
	}
	t.flush()
	for _, s := range servers {
		if s.ConfigError != "" {
			fmt.Fprintf(g.stdout, "%s: %s\n", s.Name, display.Text(s.ConfigError))
		}
		if s.State.Error == "" {
			continue
		}
		if len(s.State.Stderr) == 0 {
			fmt.Fprintf(g.stdout, "%s: %s\n", s.Name, display.Text(s.State.Error))
			continue
		}
		fmt.Fprintf(g.stdout, "%s: %s; the last lines of its stderr:\n", s.Name, display.Text(s.State.Error))
		for _, line := range s.State.Stderr {
			fmt.Fprintf(g.stdout, "  %s\n", display.Escape(line))
		}
		fmt.Fprintf(g.stdout, "  (its whole log: warden logs %s)\n", s.Name)
	}
}

func newServersAddCmd(g *globals) *cobra.Command {
	var (
		url, transport, cwd string
		envFile             string
		headers, env        []string
		read, write         []string
		trusted, onDemand   bool
		idle                time.Duration
	)
	cmd := &cobra.Command{
		Use:   "add NAME (--url URL [--header K=V]... [--transport sse] | -- COMMAND ARGS...) [--env K=V]... [--env-file FILE] [--cwd DIR] [--write DIR]... [--read DIR]... [--on-demand [--idle-timeout D]] [--trusted]",
		Short: "Add a server to the config file (comments are kept)",
		Example: `  warden servers add memory -- npx -y @modelcontextprotocol/server-memory
  warden servers add remote --url https://example.test/mcp --header 'Authorization=Bearer ${env:REMOTE_TOKEN}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			var command []string
			switch dash := cmd.ArgsLenAtDash(); {
			case dash == 1:
				command = args[1:]
			case dash == 0 || dash > 1 || (dash < 0 && len(args) > 1):
				return usageErrorf("give the server's command after --: warden servers add %s -- COMMAND ARGS...", name)
			}
			s := &config.Server{Trusted: trusted}
			switch {
			case url != "" && len(command) > 0:
				return usageErrorf("give either --url or a command after --, not both")
			case url == "" && len(command) == 0:
				return usageErrorf("say how to reach %s: --url URL for an HTTP server, or -- COMMAND ARGS... for a stdio one", name)
			case url != "":
				if len(env) > 0 || envFile != "" || cwd != "" || onDemand || len(read)+len(write) > 0 {
					return usageErrorf("--env, --env-file, --cwd, --read, --write and --on-demand are for stdio servers (started with a command), not --url ones")
				}
				if transport != "" && transport != config.TransportHTTP && transport != config.TransportSSE {
					return usageErrorf("--transport is %q; use %q (streamable HTTP) or %q (legacy HTTP+SSE)", transport, config.TransportHTTP, config.TransportSSE)
				}
				s.URL, s.Transport = url, transport
			default:
				if len(headers) > 0 || transport != "" {
					return usageErrorf("--header and --transport are for --url servers, not stdio ones")
				}
				if idle != 0 && !onDemand {
					return usageErrorf("--idle-timeout is how long an --on-demand server runs without a call; add --on-demand")
				}
				s.Command, s.Args, s.Cwd, s.OnDemand, s.IdleTimeout = command[0], command[1:], cwd, onDemand, idle
				if len(read)+len(write) > 0 {
					s.Sandbox = config.Sandbox{Paths: true, Read: absPaths(read), Write: absPaths(write)}
				}
				if envFile != "" {
					s.EnvFile = absPaths([]string{envFile})[0] // AddServer says when it cannot be read
				}
			}
			var err error
			if s.Headers, err = keyValues("--header", headers); err != nil {
				return err
			}
			if s.Env, err = keyValues("--env", env); err != nil {
				return err
			}
			path := g.configFile()
			var loaded error
			err = g.afterReload(cmd.Context(), []string{name}, func() error {
				if err := config.AddServer(path, name, s); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "added server %s to %s\n", name, path)
				return nil
			}, func(err error) { loaded = err })
			if err != nil {
				var ce *config.Error
				if errors.As(err, &ce) && ownField(ce.Field, name) && !errors.Is(err, config.ErrServerExists) {
					return usageError(err) // the command line's mistake, not the file's
				}
				return err
			}
			g.noteLiterals(path, s)
			if loaded != nil {
				return loaded
			}
			if s.Command != "" {
				if err := findCommand(s.Command, s.Cwd); err != nil {
					fmt.Fprintf(g.stderr, "warning: %v: %s will not start until it is (see: warden status)\n", err, name)
					return nil
				}
			}
			if !trusted {
				fmt.Fprintf(g.stdout, "it starts quarantined: review its tools with \"warden review %s\", then admit it with \"warden servers approve %s\"\n", name, name)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "URL of a streamable-HTTP or SSE server")
	f.StringArrayVar(&headers, "header", nil, "HTTP header `K=V` to send (repeatable; ${env:NAME} is expanded by the daemon)")
	f.StringVar(&transport, "transport", "", "http or sse (default: sse when the URL path ends in /sse, else http)")
	f.StringArrayVar(&env, "env", nil, "environment variable `K=V` for a stdio server (repeatable)")
	f.StringVar(&envFile, "env-file", "", "a `FILE` of NAME=VALUE lines whose variables a stdio server gets too (--env wins); the daemon reads it, so its values stay out of the config file")
	f.BoolVar(&trusted, "trusted", false, "approve the server's first tool inventory as its baseline instead of quarantining it")
	f.StringVar(&cwd, "cwd", "", "working directory of a stdio server (it may write there)")
	f.StringArrayVar(&write, "write", nil, "a directory the stdio server may write, beyond its own places (repeatable; sandbox.paths.write)")
	f.StringArrayVar(&read, "read", nil, "a directory the stdio server may read; with --read or --write it reads only these, its own places, its cwd and the system's (repeatable; sandbox.paths.read)")
	f.BoolVar(&onDemand, "on-demand", false, "start a stdio server only when it is called, and stop it when idle")
	f.DurationVar(&idle, "idle-timeout", 0, "with --on-demand: stop the server after this long without a call (default 10m)")
	return cmd
}

// absPaths makes paths given on the command line absolute.
func absPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		out[i] = p
	}
	return out
}

// findCommand says when command cannot be found as the daemon would look
// for it: on PATH (this shell's, most often the daemon's too), or relative
// to cwd.
func findCommand(command, cwd string) error {
	if strings.Contains(command, "/") {
		path := command
		if !filepath.IsAbs(path) && cwd != "" {
			path = filepath.Join(cwd, path)
		}
		if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable file", path)
		}
		return nil
	}
	if _, err := exec.LookPath(command); err != nil {
		return fmt.Errorf("%s is not on PATH", command)
	}
	return nil
}

// ownField reports whether field is server name's entry or in it.
func ownField(field, name string) bool {
	for _, entry := range []string{"mcpServers." + name, "mcpServers[" + strconv.Quote(name) + "]"} {
		if rest, ok := strings.CutPrefix(field, entry); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}

// noteLiterals points out values of s written into the config file as
// given, where a secret should be an ${env:NAME} reference instead.
func (g *globals) noteLiterals(path string, s *config.Server) {
	var literal []string
	for _, k := range sortedKeys(s.Headers) {
		if !strings.Contains(s.Headers[k], "${env:") {
			literal = append(literal, "header "+k)
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if !strings.Contains(s.Env[k], "${env:") {
			literal = append(literal, "env "+k)
		}
	}
	if u, err := neturl.Parse(s.URL); err == nil && (u.User != nil || u.RawQuery != "") && !strings.Contains(s.URL, "${env:") {
		literal = append(literal, "the URL's credentials or query")
	}
	if len(literal) == 0 {
		return
	}
	fmt.Fprintf(g.stderr, "note: %s stored in %s as given; if secret, write '${env:NAME}' instead to keep it out of the file\n",
		strings.Join(literal, ", "), path)
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o044 != 0 {
		fmt.Fprintf(g.stderr, "note: %s is readable by other users; to keep it private: chmod 600 %s\n", path, path)
	}
}

// keyValues parses repeated K=V flags.
func keyValues(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(kvs))
	for i, kv := range kvs {
		// The text is never quoted back: it may hold a secret.
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t:") {
			example := "Authorization=Bearer ${env:TOKEN}"
			if flag == "--env" {
				example = "API_KEY=${env:API_KEY}"
			}
			return nil, usageErrorf("%s number %d is not NAME=VALUE (not shown here, as it may hold a secret); write it as %s '%s'",
				flag, i+1, flag, example)
		}
		m[k] = v
	}
	return m, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func newServersRemoveCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "remove NAME",
		Example:           "  warden servers remove memory",
		ValidArgsFunction: g.completeArgs(0, nil),
		Short:             "Remove a server from the config file (comments are kept)",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := g.configFile()
			var refused error
			err := g.afterReload(cmd.Context(), nil, func() error {
				if err := config.RemoveServer(path, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "removed server %s from %s\n", args[0], path)
				return nil
			}, func(err error) { refused = err })
			if err != nil {
				return err
			}
			return refused
		},
	}
}

func newServersApproveCmd(g *globals) *cobra.Command {
	var (
		block []string
		yes   bool
	)
	cmd := &cobra.Command{
		Use: "approve NAME [--block TOOL,...] [--yes]",
		Example: `  warden servers approve memory
  warden servers approve memory --block delete_entities`,
		Short: "Admit a quarantined server: approve its pending tools as shown and lift the quarantine",
		Long: `Admit a quarantined server. Shows the pending tools it will approve, with
their class, and asks for confirmation unless --yes. Those tools are approved
as they are now, the --block tools are blocked, and the quarantine is lifted.
Tools held back earlier ("warden review approve NAME --all --except T") stay
held, as do tools with a high-severity guardrails finding (approve those by
name with "warden review approve"), changed tools and any tool that appears
after this command read the list. Exits 3 when tools are still pending or changed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			c, err := g.client()
			if err != nil {
				return err
			}
			tools, err := c.Tools(cmd.Context(), name)
			if err != nil {
				return g.apiErr(err)
			}
			byName := map[string]api.Tool{}
			for _, t := range tools {
				byName[t.Name] = t
			}
			if unknown := missing(byName, block); len(unknown) > 0 {
				return fmt.Errorf("%s has no tool %s; nothing was changed; list its tools with \"warden tools %s\"", name, strings.Join(unknown, ", "), name)
			}
			adm := api.PlanAdmission(heldTools(tools), block)
			sel, left, changed := adm.Approve, adm.HeldBack, adm.Changed
			plan := g.stdout
			if g.jsonOut {
				plan = g.stderr
			}
			writePlan(plan, fmt.Sprintf("about to admit %s and approve %d tool(s):", name, len(sel)), sel)
			if len(block) > 0 {
				fmt.Fprintf(plan, "to block: %s\n", strings.Join(dedupe(block), ", "))
			}
			writeLeft(plan, name, left)
			writeFlagged(plan, name, adm.Flagged)
			writeInvalid(plan, name, invalidTools(tools))
			if len(changed) > 0 {
				fmt.Fprintf(plan, "left held, changed since approved: %s (see what changed: warden review %s)\n", shownNames(names(changed)), name)
			}
			if err := g.confirmPlan(yes, fmt.Sprintf("Admit %s and approve %d tool(s) as shown?", name, len(sel)), "nothing was approved"); err != nil {
				return err
			}
			expected := map[string]string{}
			for _, t := range sel {
				expected[t.Name] = t.CurrentHash
			}
			ans, err := c.ApproveServer(cmd.Context(), name, approval.ServerApproval{ExpectedHashes: expected, Block: block})
			if err != nil {
				return g.mismatchErr(name, err)
			}
			if !g.jsonOut {
				fmt.Fprintf(g.stdout, "admitted %s: its approved tools are listed and callable\n", name)
			}
			return g.reportAnswer(name, ans)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&block, "block", nil, "tools to block instead of approving (comma-separated)")
	f.BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.ValidArgsFunction = g.completeArgs(0, nil)
	_ = cmd.RegisterFlagCompletionFunc("block", g.completeFlagTools(api.Waiting))
	return cmd
}

func newServersQuarantineCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "quarantine NAME",
		Example:           "  warden servers quarantine memory",
		ValidArgsFunction: g.completeArgs(0, nil),
		Short:             "Quarantine a server: hide and refuse all of its tools until it is approved again",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			quarantine := func(c *client.Client) (*api.Server, error) { return c.Quarantine(cmd.Context(), args[0]) }
			return ask(g, quarantine, func(s *api.Server) error {
				fmt.Fprintf(g.stdout, "quarantined %s: its tools are hidden and refused until: warden servers approve %s\n", s.Name, s.Name)
				return nil
			})
		},
	}
}
