package e2e

import (
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/state"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// BenchmarkTeam measures a team of three instances on one PostgreSQL
// behind haproxy, beside one instance on the embedded store, in one run:
//
//	call: tools/call latency (p50, p99) at one client, of each era:
//	      directly, through haproxy to the upstream (the balancer's own
//	      cost), through the embedded Warden, through one of the team's
//	      instances (on PostgreSQL) directly and through haproxy to it
//	      alone, through haproxy to the team;
//	      the added p50 against direct calls
//	decide: decisions (block, then approve, of one tool, in turn) per
//	      second through one instance's API, embedded and team
//	reach: for each team decision, the time until both other instances
//	      show it (p50, p99; the target: p50 under 100 ms, p99 under 1 s)
//
//	go test -run '^$' -bench BenchmarkTeam -benchtime 2000x ./e2e/
func BenchmarkTeam(b *testing.B) {
	// Each era against an upstream of its own: the 2025 one keeps
	// sessions, the 2026-07-28 one none (so its clients speak that revision).
	fixtureBin := testenv.BuildBinary(b, fixturePkg)
	upstream := func(args ...string) string {
		addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
		testenv.StartProcess(b, exec.Command(fixtureBin, append([]string{"-http", addr}, args...)...))
		testenv.WaitHTTP(b, "http://"+addr+"/mcp", 20*time.Second)
		return addr
	}
	ups := map[string]string{"2025-11-25": upstream(), "2026-07-28": upstream("-stateless")}
	servers := map[string]any{
		"bench":     map[string]any{"url": "http://" + ups["2025-11-25"] + "/mcp", "trusted": true},
		"stateless": map[string]any{"url": "http://" + ups["2026-07-28"] + "/mcp", "trusted": true},
	}
	tm := startTeam(b, 3, servers)
	embedded := wardentest.ServeProcess(b, tm.bin, servers)
	token, err := state.ReadToken(embedded.StateDir)
	if err != nil {
		b.Fatal(err)
	}
	emb := &instance{name: "embedded", addr: embedded.Addr, stateDir: embedded.StateDir, token: token}

	one := testenv.StartHAProxy(b, "/healthz", tm.inst[0].addr) // the balancer in front of one instance
	var ways []benchWay
	for era, server := range map[string]string{"2025-11-25": "bench", "2026-07-28": "stateless"} {
		lb := testenv.StartHAProxy(b, "", ups[era])
		direct := "direct-" + era
		ways = append(ways,
			benchWay{name: direct, url: "http://" + ups[era] + "/mcp", tool: "echo", version: era, base: direct},
			benchWay{name: "haproxy-upstream-" + era, url: "http://" + lb.Addr + "/mcp", tool: "echo", version: era, base: direct},
			benchWay{name: "embedded-" + era, url: "http://" + emb.addr + "/mcp/" + server, tool: "echo", version: era, base: direct},
			benchWay{name: "instance-" + era, url: "http://" + tm.inst[0].addr + "/mcp/" + server, tool: "echo", version: era, base: direct},
			benchWay{name: "haproxy-instance-" + era, url: "http://" + one.Addr + "/mcp/" + server, tool: "echo", version: era, base: direct},
			benchWay{name: "team-" + era, url: "http://" + tm.lb.Addr + "/mcp/" + server, tool: "echo", version: era, base: direct},
		)
	}
	for _, in := range append([]*instance{emb}, tm.inst...) {
		wardentest.WaitFor(b, 30*time.Second, "bench listed on "+in.name, func() bool { return in.toolStatus(b, "bench", "echo") == "approved" })
	}

	b.Run("call", func(b *testing.B) {
		runs := map[string]*benchTarget{}
		for _, w := range ways {
			runs[w.name] = newBenchTarget(b, w.url, w.tool, w.version, 1)
		}
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
			t := runs[w.name]
			b.ReportMetric(float64(t.p(50).Microseconds()), w.name+"-p50-µs")
			b.ReportMetric(float64(t.p(99).Microseconds()), w.name+"-p99-µs")
			if w.base != w.name {
				b.ReportMetric(float64((t.p(50) - runs[w.base].p(50)).Microseconds()), w.name+"-added-p50-µs")
			}
		}
	})

	// A decision: block the tool, or approve it again, in turn.
	decide := func(b *testing.B, in *instance, i int) string {
		path, body, want := "/v1/servers/bench/tools/block", map[string]any{"tools": []string{"delete_value"}}, "blocked"
		if i%2 == 1 {
			path, body, want = "/v1/servers/bench/tools/approve", map[string]any{"tools": []string{"delete_value"}}, "approved"
		}
		if code := in.api(b, "POST", path, body, nil); code != http.StatusOK {
			b.Fatalf("%s on %s: %d", path, in.name, code)
		}
		return want
	}
	b.Run("decide", func(b *testing.B) {
		n := min(b.N, 200)
		for _, in := range []*instance{emb, tm.inst[0]} {
			start := time.Now()
			for i := range n {
				decide(b, in, i)
			}
			kind := "team"
			if in == emb {
				kind = "embedded"
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), kind+"-decisions/s")
		}
	})
	b.Run("reach", func(b *testing.B) {
		n := min(b.N, 100)
		var reach []time.Duration
		for i := range n {
			want := decide(b, tm.inst[0], i)
			start := time.Now()
			for _, in := range tm.inst[1:] {
				for in.toolStatus(b, "bench", "delete_value") != want {
					if time.Since(start) > 10*time.Second {
						b.Fatalf("decision %d not seen on %s after 10 s", i, in.name)
					}
					time.Sleep(time.Millisecond)
				}
			}
			reach = append(reach, time.Since(start))
		}
		slices.Sort(reach)
		b.ReportMetric(float64(reach[len(reach)/2].Microseconds())/1000, "reach-p50-ms")
		b.ReportMetric(float64(reach[len(reach)*99/100].Microseconds())/1000, "reach-p99-ms")
	})
}
