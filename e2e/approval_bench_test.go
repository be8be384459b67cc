package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/approval"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/state"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// BenchmarkApproveEndToEnd320 measures approving all 320 held tools of an
// untrusted server end to end. Warden runs as its own process (`warden
// serve`) in front of a 320-tool HTTP upstream (the Go SDK fixture, in the
// benchmark process). Before each iteration, untimed, every tool's
// description is changed upstream so that all 320 are held ("changed") again;
// the timed part is then:
//
//	cli:  the real binary, `warden review approve S --all --yes`: process
//	      start, config and token, the tools to approve, POST tools/approve
//	      bound to the shown hashes (one store transaction), the answer;
//	      taking turns with `warden --help` and `/bin/true` (the CLI's own
//	      start, and a process's), so the three are measured alike
//	rest: the same two API calls through the client package, without the
//	      process start
//
// Reported: ms/op (wall time per approval of 320 tools); for cli also
// help-ms/op, true-ms/op and over-help-ms/op (ms/op less help-ms/op: the
// target is at most 25 ms); for rest also post-ms/op, the POST
// tools/approve alone.
//
//	go test -run '^$' -bench BenchmarkApproveEndToEnd320 -benchtime 20x ./e2e/
func BenchmarkApproveEndToEnd320(b *testing.B) {
	const total = 320
	up := fixture.NewServer(fixture.Options{Tools: total - 4})
	upURL := up.Serve(b)

	bin := testenv.BuildBinary(b, "./cmd/warden")
	srv := wardentest.ServeProcess(b, bin, map[string]any{"s": map[string]any{"url": upURL}})
	listen, cfgPath, stateDir := srv.Addr, srv.ConfigPath, srv.StateDir
	token, err := state.ReadToken(stateDir)
	if err != nil {
		b.Fatal(err)
	}
	c := client.New("http://"+listen, token)
	ctx := context.Background()

	waitCounts := func(what string, ok func(approval.Counts) bool) {
		var s *api.Server
		var err error
		if !wardentest.Poll(30*time.Second, func() bool {
			s, err = c.Server(ctx, "s")
			return err == nil && ok(s.Tools)
		}) {
			b.Fatalf("timed out waiting for %s (last: %+v, %v)", what, s, err)
		}
	}
	waitCounts("320 pending tools", func(n approval.Counts) bool { return n.Pending == total })
	// Admit the server with its tools as they are; from here on every
	// iteration approves 320 changed tools.
	if _, err := c.ApproveServer(ctx, "s", approval.ServerApproval{}); err != nil {
		b.Fatal(err)
	}
	waitCounts("320 approved tools", func(n approval.Counts) bool { return n.Approved == total })

	round := 0
	holdAll := func() {
		round++
		for _, name := range up.ToolNames() {
			if err := up.UpdateTool(name, func(t *mcp.Tool) { t.Description = fmt.Sprintf("%s, revision %d.", name, round) }); err != nil {
				b.Fatal(err)
			}
		}
		waitCounts("320 changed tools", func(n approval.Counts) bool { return n.Changed == total })
		// A sleep, outside the timer: let a coalesced discovery pass finish
		// (nothing signals that one is running).
		time.Sleep(20 * time.Millisecond)
	}

	b.Run("cli", func(b *testing.B) {
		var elapsed, help, bare time.Duration
		run := func(name string, args ...string) (time.Duration, []byte) {
			cmd := exec.Command(name, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			d := time.Since(start)
			if err != nil {
				b.Fatalf("%s %q: %v\n%s", name, args, err, out.String())
			}
			return d, out.Bytes()
		}
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			holdAll()
			d, _ := run(bin, "--help")
			help += d
			d, _ = run("/bin/true")
			bare += d
			b.StartTimer()
			d, out := run(bin, "review", "approve", "s", "--all", "--yes", "--config", cfgPath, "--state-dir", stateDir)
			elapsed += d
			b.StopTimer()
			if !bytes.Contains(out, []byte("approved 320")) {
				b.Fatalf("warden review approve:\n%s", out)
			}
		}
		n := float64(b.N)
		b.ReportMetric(float64(elapsed.Microseconds())/1000/n, "ms/op")
		b.ReportMetric(float64(help.Microseconds())/1000/n, "help-ms/op")
		b.ReportMetric(float64(bare.Microseconds())/1000/n, "true-ms/op")
		b.ReportMetric(float64((elapsed-help).Microseconds())/1000/n, "over-help-ms/op")
	})

	b.Run("rest", func(b *testing.B) {
		var elapsed, posts time.Duration
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			holdAll()
			b.StartTimer()
			start := time.Now()
			tools, err := c.Tools(ctx, "s")
			if err != nil {
				b.Fatal(err)
			}
			expected := map[string]string{}
			for _, t := range tools {
				if t.Present && (t.Status == approval.StatusPending || t.Status == approval.StatusChanged) {
					expected[t.Name] = t.CurrentHash
				}
			}
			mid := time.Now()
			ans, err := c.ApproveTools(ctx, "s", approval.ToolApproval{All: true, ExpectedHashes: expected})
			elapsed += time.Since(start)
			posts += time.Since(mid)
			b.StopTimer()
			if err != nil || ans.ApprovedCount != total {
				b.Fatalf("approve: %v %+v", err, ans)
			}
		}
		b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "ms/op")
		b.ReportMetric(float64(posts.Microseconds())/1000/float64(b.N), "post-ms/op")
	})
}
