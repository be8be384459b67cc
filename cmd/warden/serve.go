package main

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/wardenmcp/warden/config"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/sandbox"
	"github.com/wardenmcp/warden/upstream"
)

// answersMemoryLimit is the soft limit of the daemon's memory: twice the
// bound of answers in flight.
const answersMemoryLimit = 2 * upstream.DefaultAnswersTotal

// daemonProcs is how many CPUs the daemon runs Go code on at once, of the
// n Go would use: half, at least one. A call through Warden is a few
// reads and writes handed between goroutines; with a processor idle
// beside each one, Go wakes a thread for each hand-off and parks it again,
// which cost more than the call's own work (BenchmarkToolCall on 2 CPUs,
// with one: 0.73x to 0.92x the added latency, and no less throughput at
// 16 clients). The other half is left to the stdio servers Warden starts and
// to its clients, usually on the same machine. GOMAXPROCS overrides it.
func daemonProcs(n int) int { return max(1, n/2) }

func newServeCmd(g *globals) *cobra.Command {
	var listen, instance string
	var allowAnonymous bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Warden daemon (the gateway, the operator API and the metrics) until stopped",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// GOGC stays at its default: at 400 the heap at ready with a
			// few hundred tools was half again as large, for no throughput
			// measured (BenchmarkScale, BenchmarkToolCall).
			if os.Getenv("GOMEMLIMIT") == "" {
				// Large answers in flight are bounded
				// (upstream.DefaultAnswersTotal), and the garbage they
				// leave is collected before the heap passes this.
				debug.SetMemoryLimit(answersMemoryLimit)
			}
			if os.Getenv("GOMAXPROCS") == "" {
				runtime.GOMAXPROCS(daemonProcs(runtime.GOMAXPROCS(0)))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find warden's own binary, which starts stdio servers confined: %w", err)
			}
			isolation := sandbox.Namespaces
			switch v := os.Getenv("WARDEN_ISOLATION"); v {
			case "off": // diagnosis only; warned about at start
				isolation = sandbox.Off
			case "reaper": // what kernels without user namespaces get
				isolation = sandbox.Reaper
			case "":
			default:
				return fmt.Errorf("WARDEN_ISOLATION=%q: write off or reaper, or unset it for the default", v)
			}
			noFast := false
			switch v := os.Getenv("WARDEN_FASTPATH"); v {
			case "off": // diagnosis: every call through the SDK; warned about at start
				noFast = true
			case "", "on":
			default:
				return fmt.Errorf("WARDEN_FASTPATH=%q: write off, or unset it for the default", v)
			}
			if listen != "" {
				if err := config.CheckListen(listen); err != nil {
					return usageErrorf("--listen: %v", err)
				}
			}
			return daemon.Run(ctx, daemon.Options{
				ConfigPath: g.configPath, StateDir: g.stateDir, Listen: listen, Version: build.Version, Self: self, Isolation: isolation,
				NoFastPath: noFast, Instance: instance, AllowAnonymous: allowAnonymous,
			})
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "`host:port` to listen on instead of the config's listen (the CLI finds it by itself)")
	cmd.Flags().StringVar(&instance, "instance", "", "`name` of this instance among those sharing a store (default: the host's name and the listen port)")
	cmd.Flags().BoolVar(&allowAnonymous, "allow-anonymous", false, `serve on an address beyond loopback with neither "auth" nor "clients" in the config: anyone who reaches it may call every approved tool`)
	return cmd
}
