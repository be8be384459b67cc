package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/fixture"
	"github.com/wardenmcp/warden/internal/wardentest"
)

// BenchmarkToolCall measures tools/call latency and throughput against one
// HTTP upstream three ways, side by side in one run: directly, through
// /mcp/{server} and through the aggregated /mcp; at concurrency 1 and 16.
// Reported: p50 and p99 latency in microseconds and calls per second.
//
//	go test -run '^$' -bench BenchmarkToolCall -benchtime 3000x ./e2e/
func BenchmarkToolCall(b *testing.B) {
	up := fixture.NewServer(fixture.Options{})
	upURL := up.Serve(b)
	w := wardentest.Start(b, map[string]any{"bench": map[string]any{"url": upURL, "trusted": true}})
	w.WaitReady(b, "bench")
	targets := []struct{ name, url, tool string }{
		{"direct", upURL, "echo"},
		{"warden-server", w.URL("/mcp/bench"), "echo"},
		{"warden-aggregated", w.URL("/mcp"), "bench__echo"},
	}
	for _, conc := range []int{1, 16} {
		for _, tg := range targets {
			b.Run(fmt.Sprintf("c%d/%s", conc, tg.name), func(b *testing.B) {
				sessions := make([]*mcp.ClientSession, conc)
				for i := range sessions {
					c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
					cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: tg.url, DisableStandaloneSSE: true},
						&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
					if err != nil {
						b.Fatal(err)
					}
					defer cs.Close()
					sessions[i] = cs
				}
				args := map[string]any{"payload": "warden benchmark"}
				// Warm up connections and caches.
				for _, cs := range sessions {
					if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tg.tool, Arguments: args}); err != nil {
						b.Fatal(err)
					}
				}
				lat := make([]time.Duration, b.N)
				var next sync.Mutex
				i := 0
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for _, cs := range sessions {
					wg.Go(func() {
						for {
							next.Lock()
							n := i
							i++
							next.Unlock()
							if n >= b.N {
								return
							}
							t0 := time.Now()
							res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tg.tool, Arguments: args})
							lat[n] = time.Since(t0)
							if err != nil || res.IsError {
								b.Errorf("call: %v %v", err, res)
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			})
		}
	}
}
