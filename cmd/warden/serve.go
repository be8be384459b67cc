package main

import (
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/upstream"
)

// answersMemoryLimit is the soft limit of the daemon's memory: twice the
// bound of answers in flight.
const answersMemoryLimit = 2 * upstream.DefaultAnswersTotal

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
			if os.Getenv("GOMEMLIMIT") == "" {
				// But not by GOGC's factor over large answers: those in
				// flight are bounded (upstream.DefaultAnswersTotal), and
				// the garbage they leave is collected before the heap
				// passes this.
				debug.SetMemoryLimit(answersMemoryLimit)
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
