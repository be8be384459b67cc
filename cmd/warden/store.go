package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/instances"
	"github.com/wardenmcp/warden/internal/state"
	"github.com/wardenmcp/warden/oauth"
	"github.com/wardenmcp/warden/store"
)

func newStoreCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Move the embedded store into PostgreSQL, or seal the store's secrets under a new key",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newStoreMigrateCmd(g), newStoreRotateKeyCmd(g))
	return cmd
}

func newStoreMigrateCmd(g *globals) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "migrate --to postgres://...",
		Short: "Copy the embedded store of the state dir into PostgreSQL and check the copy (stop the daemon first)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return usageErrorf("give the database to copy into: --to postgres://USER@HOST/DB")
			}
			cfg, err := g.keyedConfig(`a shared store keeps secrets sealed with it; add "storeKey": "${env:WARDEN_STORE_KEY}" and set the variable (e.g. openssl rand -base64 32)`)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			path := g.storeFile()
			if _, err := os.Stat(path); err != nil {
				return fmt.Errorf("no embedded store to copy: %w", err)
			}
			from, err := store.Open(ctx, store.Options{Path: path, Key: cfg.StoreKey})
			if err != nil {
				return err
			}
			defer from.Close()
			// Upstream tokens an earlier version kept in plaintext become
			// secrets when oauth opens them, as the daemon would: done here
			// first, so that Copy seals them instead of copying plaintext.
			if _, err := oauth.Open(ctx, from, oauth.Options{}); err != nil {
				return err
			}
			dst, err := store.Open(ctx, store.Options{URL: to, Key: cfg.StoreKey})
			if err != nil {
				return err
			}
			defer dst.Close()
			if err := refuseLive(ctx, dst, "copying into a database they serve would change their records under them", "warden store migrate --to "+store.Redact(to)); err != nil {
				return err
			}
			return migrate(ctx, g, from, dst, to)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the PostgreSQL database, `postgres://...`")
	return cmd
}

func migrate(ctx context.Context, g *globals, from, to store.Store, url string) error {
	n, err := store.Copy(ctx, from, to)
	if err != nil {
		return err
	}
	if err := store.Verify(ctx, from, to); err != nil {
		return fmt.Errorf("the copy does not match the embedded store: %w", err)
	}
	fmt.Fprintf(g.stdout, "copied %d records into %s; the copy matches the embedded store\n", n, store.Redact(url))
	fmt.Fprintf(g.stdout, "next: set \"store\" in %s to that URL and start the instances\n", g.configFile())
	return nil
}

func newStoreRotateKeyCmd(g *globals) *cobra.Command {
	var oldEnv string
	cmd := &cobra.Command{
		Use:   "rotate-key --old-key-env VAR",
		Short: "Seal every secret in the store again under the config's storeKey, given the old key in $VAR (stop the instances first)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if oldEnv == "" {
				return usageErrorf("name the variable holding the old key: --old-key-env VAR")
			}
			old := os.Getenv(oldEnv)
			if old == "" {
				return fmt.Errorf("$%s is empty: set it to the key the store was sealed with", oldEnv)
			}
			cfg, err := g.keyedConfig("set the new key there first")
			if err != nil {
				return err
			}
			st, err := store.Open(cmd.Context(), store.Options{URL: cfg.Store, Path: g.storeFile(),
				Key: cfg.StoreKey, OldKeys: []string{old}})
			if err != nil {
				return err
			}
			defer st.Close()
			if err := refuseLive(cmd.Context(), st, "they would go on sealing secrets under the old key", "warden store rotate-key --old-key-env "+oldEnv); err != nil {
				return err
			}
			n, err := store.Rekey(cmd.Context(), st)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "sealed %d secrets again under the new key; start the instances with it\n", n)
			return nil
		},
	}
	cmd.Flags().StringVar(&oldEnv, "old-key-env", "", "the environment `VAR`iable holding the old key")
	return cmd
}

// refuseLive refuses a store command while instances run on st, naming
// them, why (because) and the command to run again (again) once they are
// stopped.
func refuseLive(ctx context.Context, st store.Store, because, again string) error {
	live, err := instances.Live(ctx, st)
	if err != nil || len(live) == 0 {
		return err
	}
	names := make([]string, len(live))
	for i, in := range live {
		names[i] = in.ID
		if in.Listen != "" {
			names[i] += " (" + baseURL(in.Listen) + ")"
		}
	}
	return fmt.Errorf("Warden instances run on this store now: %s; %s: stop them (warden status lists them), then run %s again",
		strings.Join(names, ", "), because, again)
}

// keyedConfig loads the config, which must set storeKey; fix says what to
// do when it does not.
func (g *globals) keyedConfig(fix string) (*config.Config, error) {
	cfg, err := config.Load(g.configFile())
	if err != nil {
		return nil, err
	}
	if cfg.StoreKey == "" {
		return nil, fmt.Errorf("the config %s sets no storeKey: %s", g.configFile(), fix)
	}
	return cfg, nil
}

// storeFile is the embedded store of the state dir.
func (g *globals) storeFile() string { return filepath.Join(g.resolveStateDir(), state.StoreFile) }
