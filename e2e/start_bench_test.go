package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/sandbox"
)

// BenchmarkStart measures what starting Warden's binary costs, side by side
// in one run: each iteration starts, in turn,
//
//	true:     /bin/true (a process's floor)
//	nothing:  a Go program that does nothing (a Go process's floor)
//	help:     `warden --help` (the CLI's own start)
//	direct:   /bin/true as Warden starts a server unconfined (sandbox.Direct)
//	launcher: /bin/true through Warden's resident launcher in namespaces
//	          (what every stdio server's start pays: a thread of the
//	          launcher confines itself and starts the server)
//	reaper:   the same through the launcher without namespaces
//	baseline-help: with WARDEN_BENCH_BASELINE set to another warden binary
//	          (an older build), its `--help`
//
// Reported for each: the median wall time of a start, to the process's
// exit (X-ms), and the median CPU time, user and system, of the process and
// what it ran (X-cpu-ms: less disturbed by a loaded machine), for the
// launcher's kinds the mean CPU of the launcher and the server it started;
// and help-x-nothing, the target 2x (help-x-true beside it), with
// baseline-help-x-nothing when a baseline runs, and launcher-over-direct-ms,
// what the launcher adds to a server's start.
//
//	go test -run '^$' -bench BenchmarkStart -benchtime 200x ./e2e/
func BenchmarkStart(b *testing.B) {
	warden := testenv.BuildBinary(b, "./cmd/warden")
	nothing := testenv.BuildBinary(b, "./internal/testing/fixture/cmd/nothing")
	dir := b.TempDir()
	stateDir, cfg := filepath.Join(dir, "state"), filepath.Join(dir, "config.json")
	if err := os.Mkdir(stateDir, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("{}"), 0o600); err != nil {
		b.Fatal(err)
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devNull.Close()
	launcher := func(mode sandbox.Mode) *sandbox.Launcher {
		l, err := sandbox.NewLauncher(warden, stateDir, cfg, mode)
		if err != nil {
			b.Fatalf("launcher in mode %s: %v", mode, err)
		}
		b.Cleanup(l.Close)
		return l
	}
	server := func(l *sandbox.Launcher) func() time.Duration {
		return func() time.Duration {
			var before int64
			if l.PID() != 0 {
				before = cpuTicks(b, l.PID(), true)
			}
			p, err := l.Start(context.Background(), sandbox.Spec{Name: "true", Command: "/bin/true"}, devNull, devNull, devNull)
			if err != nil {
				b.Fatal(err)
			}
			<-p.Done()
			if err := p.Err(); err != nil {
				b.Fatal(err)
			}
			if l.PID() == 0 {
				return -1
			}
			return time.Duration(cpuTicks(b, l.PID(), true)-before) * 10 * time.Millisecond
		}
	}
	run := func(name string, args ...string) func() time.Duration {
		return func() time.Duration {
			cmd := exec.Command(name, args...)
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", name, err, out)
			}
			return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
	}
	kinds := []startKind{
		{"true", run("/bin/true")},
		{"nothing", run(nothing)},
		{"help", run(warden, "--help")},
		{"direct", server(nil)},
		{"launcher", server(launcher(sandbox.Namespaces))},
		{"reaper", server(launcher(sandbox.Reaper))},
	}
	if old := os.Getenv("WARDEN_BENCH_BASELINE"); old != "" {
		kinds = append(kinds, startKind{"baseline-help", run(old, "--help")})
	}
	wall := make([][]time.Duration, len(kinds))
	cpu := make([][]time.Duration, len(kinds))
	for b.Loop() {
		for i, k := range kinds {
			start := time.Now()
			c := k.run()
			wall[i] = append(wall[i], time.Since(start))
			cpu[i] = append(cpu[i], c)
		}
	}
	p50 := map[string]float64{}
	for i, k := range kinds {
		p50[k.name] = median(wall[i])
		b.ReportMetric(p50[k.name], k.name+"-ms")
		switch {
		case cpu[i][0] < 0: // direct: its CPU is not the launcher's
		case k.name == "launcher" || k.name == "reaper": // in clock ticks: the mean
			var sum time.Duration
			for _, c := range cpu[i] {
				sum += c
			}
			b.ReportMetric(float64(sum.Microseconds())/1000/float64(len(cpu[i])), k.name+"-cpu-ms")
		default:
			b.ReportMetric(median(cpu[i]), k.name+"-cpu-ms")
		}
	}
	b.ReportMetric(p50["help"]/p50["nothing"], "help-x-nothing")
	b.ReportMetric(p50["help"]/p50["true"], "help-x-true")
	if _, ok := p50["baseline-help"]; ok {
		b.ReportMetric(p50["baseline-help"]/p50["nothing"], "baseline-help-x-nothing")
	}
	b.ReportMetric(p50["launcher"]-p50["direct"], "launcher-over-direct-ms")
}

// startKind is one of the starts BenchmarkStart takes turns with: run starts
// it, waits for its exit and returns its CPU time (-1 when unknown).
type startKind struct {
	name string
	run  func() time.Duration
}

// median of ds in ms.
func median(ds []time.Duration) float64 {
	s := slices.Sorted(slices.Values(ds))
	return float64(s[len(s)/2].Microseconds()) / 1000
}
