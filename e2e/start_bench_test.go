package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testenv"
	"github.com/wardenmcp/warden/sandbox"
)

// BenchmarkStart measures what starting Warden's binary costs, side by side
// in one run: each iteration starts, in turn,
//
//	true:     /bin/true (a process's floor)
//	nothing:  a Go program that does nothing (a Go process's floor)
//	help:     `warden --help` (the CLI's own start)
//	direct:   /bin/true as Warden starts a server unconfined (sandbox.Direct)
//	launcher: /bin/true through Warden's launcher in namespaces (what every
//	          stdio server's start pays: a copy of the binary that confines
//	          itself and execs the server)
//	reaper:   the same through the reaper fallback (no namespaces)
//	baseline-help: with WARDEN_BENCH_BASELINE set to another warden binary
//	          (an older build), its `--help`
//
// Reported for each: the median wall time of a start (X-ms) and the median
// CPU time, user and system, of the process and what it ran (X-cpu-ms: less
// disturbed by a loaded machine); and help-x-true, the target 2x, and
// launcher-over-direct-ms, what the launcher adds to a server's start.
//
//	go test -run '^$' -bench BenchmarkStart -benchtime 200x ./e2e/
func BenchmarkStart(b *testing.B) {
	warden := testenv.BuildBinary(b, "./cmd/warden")
	nothing := testenv.BuildBinary(b, "./internal/fixture/cmd/nothing")
	dir := b.TempDir()
	stateDir, cfg := filepath.Join(dir, "state"), filepath.Join(dir, "config.json")
	if err := os.Mkdir(stateDir, 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("{}"), 0o600); err != nil {
		b.Fatal(err)
	}
	launcher := func(mode sandbox.Mode) *sandbox.Launcher {
		l, err := sandbox.NewLauncher(warden, stateDir, cfg, mode)
		if err != nil {
			b.Fatalf("launcher in mode %s: %v", mode, err)
		}
		b.Cleanup(l.Close)
		return l
	}
	ns, reaper := launcher(sandbox.Namespaces), launcher(sandbox.Reaper)
	server := func(l *sandbox.Launcher) func() *exec.Cmd {
		return func() *exec.Cmd {
			cmd, err := l.Command(sandbox.Spec{Command: "/bin/true"})
			if err != nil {
				b.Fatal(err)
			}
			return cmd
		}
	}
	kinds := []startKind{
		{"true", func() *exec.Cmd { return exec.Command("/bin/true") }, false},
		{"nothing", func() *exec.Cmd { return exec.Command(nothing) }, false},
		{"help", func() *exec.Cmd { return exec.Command(warden, "--help") }, false},
		{"direct", server(nil), false},
		{"launcher", server(ns), false},
		{"reaper", server(reaper), true},
	}
	if old := os.Getenv("WARDEN_BENCH_BASELINE"); old != "" {
		kinds = append(kinds, startKind{"baseline-help", func() *exec.Cmd { return exec.Command(old, "--help") }, false})
	}
	wall := make([][]time.Duration, len(kinds))
	cpu := make([][]time.Duration, len(kinds))
	for b.Loop() {
		for i, k := range kinds {
			cmd := k.cmd()
			start := time.Now()
			out, err := cmd.CombinedOutput()
			wall[i] = append(wall[i], time.Since(start))
			if err != nil && !(k.killed && cmd.ProcessState != nil && cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL) {
				b.Fatalf("%s: %v\n%s", k.name, err, out)
			}
			cpu[i] = append(cpu[i], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
	}
	p50 := map[string]float64{}
	for i, k := range kinds {
		p50[k.name] = median(wall[i])
		b.ReportMetric(p50[k.name], k.name+"-ms")
		b.ReportMetric(median(cpu[i]), k.name+"-cpu-ms")
	}
	b.ReportMetric(p50["help"]/p50["true"], "help-x-true")
	b.ReportMetric(p50["launcher"]-p50["direct"], "launcher-over-direct-ms")
}

// startKind is one of the starts BenchmarkStart takes turns with.
type startKind struct {
	name   string
	cmd    func() *exec.Cmd
	killed bool // ends by SIGKILL: the reaper kills its group, itself included
}

// median of ds in ms.
func median(ds []time.Duration) float64 {
	s := slices.Sorted(slices.Values(ds))
	return float64(s[len(s)/2].Microseconds()) / 1000
}
