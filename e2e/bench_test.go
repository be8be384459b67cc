package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// BenchmarkToolCall measures tools/call latency and throughput against one
// HTTP upstream, side by side in one run, at concurrency 1 and 16: directly,
// through /mcp/{server}, through the aggregated /mcp, through /mcp/{server}
// with Warden's fast paths off (WARDEN_FASTPATH=off: the SDK's server and
// client alone) and for a 2026-07-28 client; with WARDEN_BENCH_BASELINE set
// to another warden binary (an older build) through its /mcp/{server} too;
// and, for scale, through two yardsticks: a TCP forwarder (the cost of one
// more process in the path, whatever it does) and a bare HTTP reverse
// proxy, in front of each upstream (the goal for each era: Warden adds no
// more than the proxy). The upstream (the Go SDK fixture) serves 2025 sessions over HTTP,
// to which the SDK's 2026-07-28 client falls back when it calls it
// directly. A second one keeps no sessions, and so speaks 2026-07-28 to
// such a client and to Warden: a 2026-07-28 client calls it directly and
// through Warden. The upstreams, Warden and the yardsticks run as their own
// processes, as they do in use; the clients are the official Go SDK's. The
// ways take turns in short rounds. Reported per way: p50 and p99 latency in
// microseconds, calls per second, and against direct calls of the same
// upstream: the added p50 and the throughput ratio.
//
//	go test -run '^$' -bench BenchmarkToolCall -benchtime 5000x ./e2e/
func BenchmarkToolCall(b *testing.B) {
	fixtureBin := testenv.BuildBinary(b, fixturePkg)
	upAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
	testenv.StartProcess(b, exec.Command(fixtureBin, "-http", upAddr))
	upURL := "http://" + upAddr + "/mcp"
	testenv.WaitHTTP(b, upURL, 20*time.Second)
	// The same without sessions: its clients of 2026-07-28, Warden's too,
	// speak that revision.
	statelessAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
	testenv.StartProcess(b, exec.Command(fixtureBin, "-http", statelessAddr, "-stateless"))
	statelessURL := "http://" + statelessAddr + "/mcp"
	testenv.WaitHTTP(b, statelessURL, 20*time.Second)

	// Warden as it runs, and with its fast paths off (every call through
	// the SDK's server and client, as a 2026-07-28 client's goes in part).
	servers := map[string]any{"bench": map[string]any{"url": upURL, "trusted": true}, "stateless": map[string]any{"url": statelessURL, "trusted": true}}
	listen := wardentest.ServeProcess(b, "", servers).Addr
	sdkListen := wardentest.ServeProcess(b, "", servers, "WARDEN_FASTPATH=off").Addr
	proxyBin := testenv.BuildBinary(b, "./internal/testing/fixture/cmd/plainproxy")
	proxyURL := startPlainProxy(b, proxyBin, upURL)
	statelessProxyURL := startPlainProxy(b, proxyBin, statelessURL)
	fwdAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
	testenv.StartProcess(b, exec.Command(testenv.BuildBinary(b, "./internal/testing/fixture/cmd/tcpforward"), fwdAddr, upAddr))
	testenv.WaitHTTP(b, "http://"+fwdAddr+"/mcp", 20*time.Second)
	const era2025, era2026 = "2025-11-25", "2026-07-28"
	// Each way is set against the first (direct) but for those that name
	// another.
	ways := []benchWay{
		{name: "direct", url: upURL, tool: "echo", version: era2025},
		{name: "tcp-forward", url: "http://" + fwdAddr + "/mcp", tool: "echo", version: era2025},
		{name: "plain-proxy", url: proxyURL, tool: "echo", version: era2025},
		{name: "warden-server", url: "http://" + listen + "/mcp/bench", tool: "echo", version: era2025},
		{name: "warden-aggregated", url: "http://" + listen + "/mcp", tool: "bench__echo", version: era2025},
		{name: "warden-sdk-paths", url: "http://" + sdkListen + "/mcp/bench", tool: "echo", version: era2025},
		{name: "warden-2026-client", url: "http://" + listen + "/mcp/bench", tool: "echo", version: era2026},
		{name: "direct-stateless", url: statelessURL, tool: "echo", version: era2026, base: "direct-stateless"},
		{name: "plain-proxy-stateless", url: statelessProxyURL, tool: "echo", version: era2026, base: "direct-stateless"},
		{name: "warden-stateless-upstream", url: "http://" + listen + "/mcp/stateless", tool: "echo", version: era2026, base: "direct-stateless"},
	}
	if old := os.Getenv("WARDEN_BENCH_BASELINE"); old != "" {
		// Another warden binary (an older build) beside, to compare with.
		oldListen := wardentest.ServeProcess(b, old, servers).Addr
		ways = append(ways, benchWay{name: "baseline-server", url: "http://" + oldListen + "/mcp/bench", tool: "echo", version: era2025},
			benchWay{name: "baseline-2026-client", url: "http://" + oldListen + "/mcp/bench", tool: "echo", version: era2026},
			benchWay{name: "baseline-stateless-upstream", url: "http://" + oldListen + "/mcp/stateless", tool: "echo", version: era2026, base: "direct-stateless"})
	}
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("c%d", conc), func(b *testing.B) {
			runs := map[string]*benchTarget{}
			for _, w := range ways {
				runs[w.name] = newBenchTarget(b, w.url, w.tool, w.version, conc)
			}
			// Ways take turns in short rounds, so that a change in the
			// machine's speed during the run touches them all alike; each
			// round starts one way further on, so that no way always
			// follows the same one (a heavy way leaves work behind it on
			// two cores: the one after it paid up to a tenth).
			const rounds = 10
			b.ResetTimer()
			for r := range rounds {
				n := b.N / rounds
				if r == 0 {
					n += b.N % rounds
				}
				for i := range ways {
					runs[ways[(i+r)%len(ways)].name].run(b, n)
				}
			}
			b.StopTimer()
			for _, w := range ways {
				t, direct := runs[w.name], runs[cmp.Or(w.base, "direct")]
				b.ReportMetric(float64(t.p(50).Microseconds()), w.name+"-p50-µs")
				b.ReportMetric(float64(t.p(99).Microseconds()), w.name+"-p99-µs")
				b.ReportMetric(t.rate(), w.name+"-calls/s")
				if t != direct {
					b.ReportMetric(float64((t.p(50) - direct.p(50)).Microseconds()), w.name+"-added-p50-µs")
					b.ReportMetric(t.rate()/direct.rate(), w.name+"-x-direct")
				}
			}
		})
	}
}

// startPlainProxy starts the reverse-proxy yardstick in front of upstream
// and returns its URL.
func startPlainProxy(b *testing.B, bin, upstream string) string {
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
	testenv.StartProcess(b, exec.Command(bin, addr, upstream))
	u := "http://" + addr + "/mcp"
	testenv.WaitHTTP(b, u, 20*time.Second)
	return u
}

// benchWay is a way to call the upstream: a client of version calls tool
// at url; base names the way its figures are set against ("": direct).
type benchWay struct{ name, url, tool, version, base string }

// benchTarget is one way to reach the upstream, with its clients and the
// latencies and time measured so far.
type benchTarget struct {
	tool     string
	sessions []*mcp.ClientSession
	lat      []time.Duration
	elapsed  time.Duration
}

func newBenchTarget(b *testing.B, url, tool, version string, conc int) *benchTarget {
	t := &benchTarget{tool: tool}
	for range conc {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			b.Fatal(err)
		}
		if v := cs.InitializeResult().ProtocolVersion; v != version {
			b.Fatalf("%s: negotiated %s, want %s", url, v, version)
		}
		b.Cleanup(func() { cs.Close() })
		t.sessions = append(t.sessions, cs)
	}
	// Warm up connections and caches (and wait for Warden to have listed
	// the upstream).
	for _, cs := range t.sessions {
		waitTool(b, cs, tool)
	}
	t.run(b, len(t.sessions))
	t.lat, t.elapsed = nil, 0
	return t
}

// run makes n calls, spread over the target's clients.
func (t *benchTarget) run(b *testing.B, n int) {
	args := map[string]any{"payload": "warden benchmark"}
	lat := make([]time.Duration, n)
	var next sync.Mutex
	i := 0
	start := time.Now()
	var wg sync.WaitGroup
	for _, cs := range t.sessions {
		wg.Go(func() {
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= n {
					return
				}
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: t.tool, Arguments: args})
				lat[k] = time.Since(t0)
				if err != nil || res.IsError {
					b.Errorf("call: %v %v", err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	t.elapsed += time.Since(start)
	t.lat = append(t.lat, lat...)
}

func (t *benchTarget) p(q int) time.Duration {
	s := slices.Clone(t.lat)
	slices.Sort(s)
	return s[len(s)*q/100]
}

func (t *benchTarget) rate() float64 { return float64(len(t.lat)) / t.elapsed.Seconds() }

func waitTool(b testing.TB, cs *mcp.ClientSession, name string) {
	listed := wardentest.Poll(20*time.Second, func() bool {
		for t, err := range cs.Tools(context.Background(), nil) {
			if err == nil && t.Name == name {
				return true
			}
		}
		return false
	})
	if !listed {
		b.Fatalf("tool %s never listed", name)
	}
}
