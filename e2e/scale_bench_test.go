package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// BenchmarkScale starts 28 stdio fixture servers serving 462 tools in all
// (the size of a real-world tool set), side by side in one run: by a plain
// SDK client (the floor: the servers' own start and listing) and by Warden
// (`warden serve` as its own process, with an SDK client on /mcp waiting for
// every tool). Reported per iteration (means): the time until all tools are
// listed by each and their ratio (x-floor: a first start, which makes the
// state dir, approves the baseline and scans every definition;
// restart-x-floor: a restart on the state the first left); at ready, the CPU time and page faults of
// Warden's daemon so far, and the memory of the daemon and of every process
// of Warden's binary (PSS and RSS, MB); Warden's CPU
// per tools/list of the 462 tools on /mcp, and its memory after 473 of
// them; and the memory of every process of Warden's binary after 10,000
// tools/call at 16 clients (each its own session on /mcp). The memory at
// ready and after the calls is measured again once Warden has been left
// alone for settle (ready-settled, calls-settled).
//
// With WARDEN_BENCH_BASELINE set to another warden binary (an older build),
// that binary is started too in each iteration, before or after this one in
// turn, and its start and memory at ready are reported beside (baseline-*).
//
//	go test -run '^$' -bench BenchmarkScale -benchtime 5x ./e2e/
func BenchmarkScale(b *testing.B) {
	const servers = 28
	fixture := testenv.BuildBinary(b, fixturePkg)
	warden := testenv.BuildBinary(b, "./cmd/warden")
	baseline := os.Getenv("WARDEN_BENCH_BASELINE")
	// 4 fixed tools each, 12 or 13 generated with real-world-sized
	// schemas: 462 in all.
	args := func(i int) []string { return []string{"-tools", strconv.Itoa(12 + i%2), "-rich-schemas"} }
	cfg := map[string]any{}
	for i := range servers {
		cfg["s"+strconv.Itoa(i)] = map[string]any{"command": fixture, "args": args(i), "trusted": true}
	}
	var floor float64
	var now, base scaleRun
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		total := floorStart(b, fixture, servers, args)
		floor += time.Since(start).Seconds()
		if baseline != "" && i%2 == 1 { // first every other time
			base.add(runScale(b, baseline, cfg, total, false))
		}
		now.add(runScale(b, warden, cfg, total, true))
		if baseline != "" && i%2 == 0 {
			base.add(runScale(b, baseline, cfg, total, false))
		}
	}
	n := float64(b.N)
	b.ReportMetric(floor/n, "floor-listed-s")
	b.ReportMetric(now.listed/n, "warden-listed-s")
	b.ReportMetric(now.listed/floor, "x-floor")
	b.ReportMetric(now.relisted/floor, "restart-x-floor")
	b.ReportMetric(now.readyCPU/n, "ready-cpu-ms")
	b.ReportMetric(now.readyFaults/n, "ready-faults")
	b.ReportMetric(now.ready.daemonPSS/n, "ready-pss-MB")
	b.ReportMetric(now.ready.daemonRSS/n, "ready-rss-MB")
	b.ReportMetric(now.ready.ownPSS/n, "ready-own-pss-MB")
	b.ReportMetric(now.ready.ownRSS/n, "ready-own-rss-MB")
	b.ReportMetric(now.cpu/n, "cpu-ms/list")
	b.ReportMetric(now.lists.daemonPSS/n, "lists-pss-MB")
	b.ReportMetric(now.lists.daemonRSS/n, "lists-rss-MB")
	b.ReportMetric(now.calls.ownPSS/n, "calls-own-pss-MB")
	b.ReportMetric(now.calls.ownRSS/n, "calls-own-rss-MB")
	b.ReportMetric(now.readySettled.ownPSS/n, "ready-settled-own-pss-MB")
	b.ReportMetric(now.callsSettled.ownPSS/n, "calls-settled-own-pss-MB")
	if baseline != "" {
		b.ReportMetric(base.listed/n, "baseline-listed-s")
		b.ReportMetric(base.listed/floor, "baseline-x-floor")
		b.ReportMetric(base.relisted/floor, "baseline-restart-x-floor")
		b.ReportMetric(base.ready.ownPSS/n, "baseline-ready-own-pss-MB")
		b.ReportMetric(base.readySettled.ownPSS/n, "baseline-ready-settled-own-pss-MB")
		b.ReportMetric(base.readyCPU/n, "baseline-ready-cpu-ms")
		b.ReportMetric(base.readyFaults/n, "baseline-ready-faults")
	}
}

// scaleRun is what one start of Warden measured (sums over iterations).
type scaleRun struct {
	listed              float64 // seconds until every tool was listed
	relisted            float64 // the same at a restart, on the state the start left
	readyCPU            float64 // ms of the daemon's CPU until then
	readyFaults         float64 // the daemon's page faults until then
	cpu                 float64 // ms of Warden's CPU per tools/list
	ready, lists, calls memory
	// the same settled: after settle with no request, once at ready and
	// once after the calls
	readySettled, callsSettled memory
}

func (r *scaleRun) add(o scaleRun) {
	r.listed += o.listed
	r.relisted += o.relisted
	r.readyCPU += o.readyCPU
	r.readyFaults += o.readyFaults
	r.cpu += o.cpu
	r.ready.add(o.ready)
	r.lists.add(o.lists)
	r.calls.add(o.calls)
	r.readySettled.add(o.readySettled)
	r.callsSettled.add(o.callsSettled)
}

// runScale starts the warden binary with servers until all total tools are
// listed on /mcp, measuring, and again once settled; then, with load, lists
// them 473 times and makes 10,000 calls at 16 clients, measuring along and
// once settled after; it stops Warden, and times a restart on the state it
// left until all tools are listed again.
func runScale(b *testing.B, warden string, servers map[string]any, total int, load bool) (r scaleRun) {
	start := time.Now()
	p := wardentest.ServeProcess(b, warden, servers)
	cs := connectAggregated(b, p.URL("/mcp"))
	awaitToolCount(b, cs, total)
	r.listed = time.Since(start).Seconds()
	measureScale(b, p, cs, warden, len(servers), load, &r)
	cs.Close()
	p.Stop()

	start = time.Now()
	p = p.Again(b, warden)
	defer p.Stop()
	cs = connectAggregated(b, p.URL("/mcp"))
	defer cs.Close()
	awaitToolCount(b, cs, total)
	r.relisted = time.Since(start).Seconds()
	return r
}

// measureScale measures p, all tools listed, into r (see runScale).
func measureScale(b *testing.B, p *wardentest.Process, cs *toolWatch, warden string, servers int, load bool, r *scaleRun) {
	const lists, calls, clients = 473, 10000, 16
	r.ready = processMemory(b, p.PID(), warden)
	r.readyCPU = float64(cpuTicks(b, p.PID(), false)) * 10 // ms; 100 ticks a second
	r.readyFaults = float64(statFields(b, p.PID(), 10))    // minflt
	time.Sleep(settle)
	r.readySettled = processMemory(b, p.PID(), warden)
	if !load {
		return
	}
	before := cpuTicks(b, p.PID(), false)
	for range lists {
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
	r.cpu = float64(cpuTicks(b, p.PID(), false)-before) * 10 / lists // 100 ticks a second
	r.lists = processMemory(b, p.PID(), warden)
	callConcurrently(b, p.URL("/mcp"), servers, calls, clients)
	r.calls = processMemory(b, p.PID(), warden)
	time.Sleep(settle)
	r.callsSettled = processMemory(b, p.PID(), warden)
}

// settle is how long Warden is left alone before a settled measurement:
// long enough for it to give back what a burst left (daemon/memory.go,
// twice its releaseEvery and a second).
const settle = 11 * time.Second

// callConcurrently makes calls tools/call of echo through url, from clients
// sessions at once, each calling the servers in turn.
func callConcurrently(b *testing.B, url string, servers, calls, clients int) {
	var wg sync.WaitGroup
	for c := range clients {
		cs := connectAggregated(b, url)
		defer cs.Close()
		wg.Go(func() {
			for i := c; i < calls; i += clients {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
					Name: "s" + strconv.Itoa(i%servers) + "__echo", Arguments: map[string]any{"i": i}})
				if err != nil || res.IsError {
					b.Errorf("call %d: %v %+v", i, err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// floorStart starts the servers with a plain SDK client each, in parallel,
// lists their tools, closes them, and returns how many tools they list.
func floorStart(b *testing.B, fixture string, servers int, args func(int) []string) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	total := 0
	for i := range servers {
		wg.Go(func() {
			c := mcp.NewClient(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(fixture, args(i)...)}, nil)
			if err != nil {
				b.Error(err)
				return
			}
			defer cs.Close()
			n := 0
			for _, err := range cs.Tools(context.Background(), nil) {
				if err != nil {
					b.Error(err)
					return
				}
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return total
}

// connectAggregated connects an SDK client to url that re-lists on each
// list_changed notification (see awaitToolCount).
func connectAggregated(b *testing.B, url string) *toolWatch {
	w := &toolWatch{changed: make(chan struct{}, 1)}
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case w.changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	w.ClientSession = cs
	return w
}

type toolWatch struct {
	*mcp.ClientSession
	changed chan struct{}
}

// awaitToolCount lists until want tools are listed, listing again on each
// list_changed notification.
func awaitToolCount(b *testing.B, w *toolWatch, want int) {
	timeout := time.After(60 * time.Second)
	for {
		n := 0
		for _, err := range w.Tools(context.Background(), nil) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n == want {
			return
		}
		select {
		case <-w.changed:
		case <-timeout:
			b.Fatalf("%d tools listed of %d after 60s", n, want)
		}
	}
}

type memory struct{ daemonPSS, daemonRSS, ownPSS, ownRSS float64 }

func (m *memory) add(o memory) {
	m.daemonPSS += o.daemonPSS
	m.daemonRSS += o.daemonRSS
	m.ownPSS += o.ownPSS
	m.ownRSS += o.ownRSS
}

// processMemory is the memory of pid and of its descendants running binary
// (exe), in MB.
func processMemory(b *testing.B, pid int, exe string) memory {
	var m memory
	m.daemonPSS, m.daemonRSS = rollup(b, pid)
	m.ownPSS, m.ownRSS = m.daemonPSS, m.daemonRSS
	for _, c := range testenv.Descendants(pid) {
		if path, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(c.PID), "exe")); err != nil || path != exe {
			continue
		}
		p, r := rollup(b, c.PID)
		m.ownPSS += p
		m.ownRSS += r
	}
	return m
}

// rollup reads Pss and Rss of /proc/<pid>/smaps_rollup, in MB.
func rollup(b *testing.B, pid int) (pss, rss float64) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "Pss:":
			pss = kb / 1024
		case "Rss:":
			rss = kb / 1024
		}
	}
	return pss, rss
}

// cpuTicks is the user and system CPU time pid has used, in clock ticks,
// with its reaped children's if children.
func cpuTicks(b *testing.B, pid int, children bool) int64 {
	// utime and stime are the 14th and 15th fields of the line, the
	// reaped children's the 16th and 17th.
	fields := []int{14, 15}
	if children {
		fields = append(fields, 16, 17)
	}
	return statFields(b, pid, fields...)
}

// statFields is the sum of the numbered fields (from 1) of pid's
// /proc/PID/stat.
func statFields(b *testing.B, pid int, fields ...int) int64 {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		b.Fatal(err)
	}
	// The command, the 2nd field, is in parentheses and may hold spaces:
	// the fields after it, from the 3rd.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	var sum int64
	for _, i := range fields {
		n, _ := strconv.ParseInt(f[i-3], 10, 64)
		sum += n
	}
	return sum
}
