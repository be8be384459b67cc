package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenmcp/warden/config"
)

func newImportCmd(g *globals) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "import [FILE | --from HOST]",
		Short: "Copy the MCP servers of another host's config file into Warden's (comments are kept)",
		Long: `Copy the servers of another MCP host's config file into Warden's config.
Hosts: ` + hostNames() + ` (their usual file on Linux),
or any such file, JSON or Codex's TOML. A name Warden's config has already is
reported and left alone; an entry Warden cannot load (such as one using VS
Code's ${input:...} prompts) is reported and not copied. ${env:NAME}
references are copied as written; ${workspaceFolder} and the other path
variables are copied expanded for the file's workspace, and an envFile as
its absolute path (never its values). Imported servers start quarantined.`,
		Example: `  warden import --from claude-desktop
  warden import .vscode/mcp.json
  warden import --from codex`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var path string
			switch {
			case from != "" && len(args) == 1:
				return usageErrorf("give a FILE or --from HOST, not both")
			case from != "":
				h, err := findHost(from)
				if err != nil {
					return err
				}
				path = h.file()
			case len(args) == 1:
				path = args[0]
			default:
				return usageErrorf("say what to import: a FILE, or --from HOST (%s)", hostNames())
			}
			src, err := readServers(path)
			if err != nil {
				return err
			}
			target := g.configFile()
			if same(path, target) {
				return fmt.Errorf("%s is Warden's own config: nothing to import", path)
			}
			for _, n := range src.Notes {
				fmt.Fprintf(g.stderr, "note: %s\n", n)
			}
			have, err := config.LoadAll(target)
			if err != nil {
				return err
			}
			var names []string
			var servers []*config.Server
			failed := false
			for _, name := range sortedServerNames(src) {
				switch {
				case have.Servers[name] != nil || have.Broken[name] != nil:
					fmt.Fprintf(g.stdout, "%s: not imported: %s has a server %s already (to replace it: warden servers remove %s, then import again)\n", name, target, name, name)
				case src.Broken[name] != nil:
					failed = true
					fmt.Fprintf(g.stdout, "%s: not imported: %v\n", name, src.Broken[name])
				default:
					names = append(names, name)
					servers = append(servers, src.Servers[name])
				}
			}
			if len(names) == 0 {
				fmt.Fprintf(g.stdout, "nothing imported from %s\n", path)
				if failed {
					return errReported
				}
				return nil
			}
			var refused error
			err = g.afterReload(cmd.Context(), names, func() error {
				if err := config.AddServers(target, names, servers); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "imported %s from %s into %s\n", strings.Join(names, ", "), path, target)
				return nil
			}, func(err error) { refused = err })
			if err != nil {
				return err
			}
			for _, s := range servers {
				g.noteLiterals(target, s)
			}
			fmt.Fprintf(g.stdout, "they start quarantined: review each with \"warden review NAME\", then admit it with \"warden servers approve NAME\"\n")
			if refused != nil {
				return refused
			}
			if failed {
				return errReported
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "import from this host's usual config file: "+hostNames())
	return cmd
}
