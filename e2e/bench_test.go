package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testenv"
)

// BenchmarkToolCall measures tools/call latency and throughput against one
// HTTP upstream, side by side in one run: directly, through /mcp/{server},
// through the aggregated /mcp, and through a bare HTTP reverse proxy (the
// cost of any extra process hop, for scale); at concurrency 1 and 16.
// The upstream (the Go SDK fixture) and Warden run as their own processes,
// as they do in use; the clients are the official Go SDK's. Reported: p50 and
// p99 latency in microseconds and calls per second.
//
//	go test -run '^$' -bench BenchmarkToolCall -benchtime 3000x ./e2e/
func BenchmarkToolCall(b *testing.B) {
	upAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
	testenv.StartProcess(b, exec.Command(testenv.BuildBinary(b, fixturePkg), "-http", upAddr))
	upURL := "http://" + upAddr + "/mcp"
	testenv.WaitHTTP(b, upURL, 20*time.Second)

	dir := b.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
	cfg, _ := json.Marshal(map[string]any{"listen": listen, "mcpServers": map[string]any{"bench": map[string]any{"url": upURL, "trusted": true}}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	testenv.StartProcess(b, exec.Command(testenv.BuildBinary(b, "./cmd/warden"), "serve",
		"--config", filepath.Join(dir, "config.json"), "--state-dir", filepath.Join(dir, "state")))
	testenv.WaitHTTP(b, "http://"+listen+"/healthz", 20*time.Second)
	proxyAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
	testenv.StartProcess(b, exec.Command(testenv.BuildBinary(b, "./internal/fixture/cmd/plainproxy"), proxyAddr, upURL))
	testenv.WaitHTTP(b, "http://"+proxyAddr+"/mcp", 20*time.Second)
	targets := []struct{ name, url, tool string }{
		{"direct", upURL, "echo"},
		{"plain-proxy", "http://" + proxyAddr + "/mcp", "echo"},
		{"warden-server", "http://" + listen + "/mcp/bench", "echo"},
		{"warden-aggregated", "http://" + listen + "/mcp", "bench__echo"},
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
				// Warm up connections and caches (and wait for Warden to
				// have listed the upstream).
				for _, cs := range sessions {
					waitTool(b, cs, tg.tool)
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

func waitTool(b *testing.B, cs *mcp.ClientSession, name string) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for t, err := range cs.Tools(context.Background(), nil) {
			if err == nil && t.Name == name {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("tool %s never listed", name)
}
