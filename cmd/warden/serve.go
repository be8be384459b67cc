package main

import (
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wardenmcp/warden/daemon"
)

func newServeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the Warden daemon (the gateway, the operator API and the metrics) until stopped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv("GOGC") == "" {
				// A gateway's heap is small and its garbage is per-call
				// JSON: collecting less often costs little memory and
				// takes work off the call path.
				debug.SetGCPercent(400)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			self, err := os.Executable()
			if err != nil {
				self = "" // start stdio servers without the reaper
			}
			return daemon.Run(ctx, daemon.Options{
				ConfigPath: g.configPath, StateDir: g.stateDir, Version: version, Reaper: self,
			})
		},
	}
}
