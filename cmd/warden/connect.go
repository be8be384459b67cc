package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/wardenmcp/warden/config"
)

func newConnectCmd(g *globals) *cobra.Command {
	var write bool
	cmd := &cobra.Command{
		Use: "connect HOST [--write]",
		Example: `  warden connect claude-desktop
  warden connect cursor --write`,
		Short: "Show (or, with --write, add) the entry that points an MCP host at Warden",
		Long: `Show the entry that points an MCP host (` + hostNames() + `)
at Warden: its streamable-HTTP endpoint /mcp, or "warden stdio" for a host
that can only launch commands. With --write it is added to the host's config
file as the server "warden", after a copy of the file is kept beside it
(FILE.warden-backup); comments and the rest of the file stay as they were.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := findHost(args[0])
			if err != nil {
				return err
			}
			path := h.file()
			entry, text := g.hostEntry(h)
			listen := g.listen()
			if !write {
				fmt.Fprintf(g.stdout, "%s keeps its MCP servers in %s. Add:\n\n%s\n", h.title, path, text)
				if h.cli != nil {
					fmt.Fprintf(g.stdout, "or run: %s\n", h.cli(baseURL(listen)+"/mcp", g.stdioCommand()))
				}
				fmt.Fprintf(g.stdout, "or let Warden add it (keeping a backup of the file): warden connect %s --write\n", h.name)
				fmt.Fprintf(g.stdout, "Copy the host's servers into Warden first (warden import --from %s), then remove them from the host's file, so they are reached through Warden only.\n", h.name)
				return nil
			}
			if hostHasWarden(path) {
				return fmt.Errorf("%s has a server named warden already: nothing written", path)
			}
			if _, err := os.Stat(path); err == nil {
				saved, err := backup(path)
				if err != nil {
					return fmt.Errorf("cannot keep a backup of %s, so nothing was written: %w", path, err)
				}
				fmt.Fprintf(g.stdout, "kept a copy of %s as %s\n", path, saved)
			}
			if h.key == "" {
				err = appendTOML(path, text)
			} else {
				err = config.AddHostEntry(path, h.key, "warden", entry)
			}
			if errors.Is(err, config.ErrServerExists) {
				return fmt.Errorf("%s has a server named warden already: nothing written", path)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "added the server warden to %s; restart %s (or reload its MCP servers) to use it\n", path, h.title)
			return nil
		},
	}
	cmd.Flags().BoolVar(&write, "write", false, "add the entry to the host's config file (a backup is kept)")
	return cmd
}
