package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/instances"
)

func newStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the daemon's version, uptime and each server's state",
		Long: `Show the daemon's version, uptime and each server's state, with why a
server's entry in the config file cannot be loaded and why the last reload
of the file was refused. Exits 1 when either is so: the daemon runs, but
not all of the file as it is now.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.client()
			if err != nil {
				return err
			}
			st, err := c.Status(cmd.Context())
			if err != nil {
				return g.apiErr(err)
			}
			if g.jsonOut {
				if err := g.printJSON(st); err != nil {
					return err
				}
				return configProblems(st)
			}
			up := time.Duration(st.UptimeSeconds * float64(time.Second))
			fmt.Fprintf(g.stdout, "warden %s at %s, up %s\n", st.Version, baseURL(st.Listen), ago(up))
			fmt.Fprintf(g.stdout, "config %s\n", st.ConfigPath)
			printReloadError(g, st.ReloadError)
			printInstances(g, st.Instances)
			if len(st.Servers) == 0 {
				fmt.Fprintln(g.stdout, "no servers; add one with: warden servers add NAME --url URL  (or: -- COMMAND ARGS...)")
				return configProblems(st)
			}
			fmt.Fprintln(g.stdout)
			printServers(g, st.Servers)
			fmt.Fprintf(g.stdout, "\ntool definitions cost about %d tokens on /mcp, %d on /mcp?view=search (estimate: bytes of JSON / 4)\n",
				st.ViewTokens["all"], st.ViewTokens["search"])
			return configProblems(st)
		},
	}
}

// configProblems is status's error when the config file as it is now does
// not wholly load (a reload was refused, or server entries cannot be
// loaded), so that the exit status tells a script what the output shows.
func configProblems(st *api.Status) error {
	var broken []string
	for _, s := range st.Servers {
		if s.ConfigError != "" {
			broken = append(broken, s.Name)
		}
	}
	switch {
	case st.ReloadError != "":
		return fmt.Errorf("%s was refused as it is now, and the daemon still runs the config it had; fix the file (warden status says why) and it reloads", st.ConfigPath)
	case len(broken) == 1:
		return fmt.Errorf("the entry of server %s in %s cannot be loaded; fix it there (warden status says why) and the daemon reloads the file",
			broken[0], st.ConfigPath)
	case len(broken) > 1:
		return fmt.Errorf("the entries of %d servers in %s cannot be loaded (%s); fix them there (warden status says why) and the daemon reloads the file",
			len(broken), st.ConfigPath, strings.Join(broken, ", "))
	}
	return nil
}

// printInstances lists the instances sharing the store (none: the
// embedded store, one instance), each with when it was last seen.
func printInstances(g *globals, list []instances.Instance) {
	if len(list) == 0 {
		return
	}
	fmt.Fprintf(g.stdout, "%d instances share the store:\n", len(list))
	for _, i := range list {
		state := "last seen " + ago(time.Since(i.LastSeen)) + " ago"
		if i.Gone {
			state = "GONE: " + state + " (it stopped without removing itself; it is listed until an instance of that name starts)"
		}
		fmt.Fprintf(g.stdout, "  %s  %s  %s  %s\n", i.ID, baseURL(i.Listen), i.Version, state)
	}
}
