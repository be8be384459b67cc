package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// BenchmarkSoak runs b.N tool calls at 16 clients through Warden (as its
// own process) while a stdio server floods log messages to 20 client
// sessions at level info (raw streams), one of which never reads. Reported:
// Warden's resident memory before the load (servers connected, clients
// not yet), after it, and at its peak, in MB, and the calls per second.
//
//	go test -run '^$' -bench BenchmarkSoak -benchtime 10000x ./e2e/
func BenchmarkSoak(b *testing.B) {
	fixture := testenv.BuildBinary(b, fixturePkg)
	upAddr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(b))
	testenv.StartProcess(b, exec.Command(fixture, "-http", upAddr))
	upURL := "http://" + upAddr + "/mcp"
	testenv.WaitHTTP(b, upURL, 20*time.Second)
	warden := wardentest.ServeProcess(b, "", map[string]any{
		"bench": map[string]any{"url": upURL, "trusted": true},
		"flood": map[string]any{"command": fixture, "args": []string{"-flood", "-1"}, "trusted": true},
	})
	listen := warden.Addr
	calls := newBenchTarget(b, "http://"+listen+"/mcp", "bench__echo", "2025-11-25", 16)
	before := vmKB(b, warden.PID(), "VmRSS")

	// The listeners read their streams raw: decoding thousands of
	// messages a second in SDK clients would take the machine's cores
	// from Warden.
	var heard atomic.Int64
	for range 19 {
		stream := logStream(b, "http://"+listen+"/mcp/flood")
		go func() {
			sc := bufio.NewScanner(stream)
			for sc.Scan() {
				if bytes.HasPrefix(sc.Bytes(), []byte("data:")) {
					heard.Add(1)
				}
			}
		}()
	}
	stuckClient(b, "http://"+listen+"/mcp/flood")

	b.ResetTimer()
	calls.run(b, b.N)
	b.StopTimer()
	b.ReportMetric(float64(before)/1024, "rss-before-MB")
	b.ReportMetric(float64(vmKB(b, warden.PID(), "VmRSS"))/1024, "rss-after-MB")
	b.ReportMetric(float64(vmKB(b, warden.PID(), "VmHWM"))/1024, "rss-peak-MB")
	b.ReportMetric(calls.rate(), "calls/s")
	b.ReportMetric(float64(heard.Load())/calls.elapsed.Seconds(), "log-msgs/s")
}

// BenchmarkLargeAnswers makes ten calls at once whose answers are 60 MB
// each, through Warden as its own process, and reports Warden's peak
// resident memory in MB.
//
//	go test -run '^$' -bench BenchmarkLargeAnswers -benchtime 1x ./e2e/
func BenchmarkLargeAnswers(b *testing.B) {
	const size = 60 << 20
	warden := wardentest.ServeProcess(b, "", map[string]any{"big": map[string]any{"url": hugeAnswerFixture(b, size), "trusted": true, "callTimeout": "10m"}})
	listen := warden.Addr
	t := newBenchTarget(b, "http://"+listen+"/mcp", "big__echo", "2025-11-25", 10)
	before := vmKB(b, warden.PID(), "VmRSS")
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		for _, cs := range t.sessions {
			wg.Go(func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big__huge_answer"})
				if err != nil || res.IsError || len(wardentest.ResultText(res)) != size {
					b.Errorf("call: %v, %d bytes", err, len(wardentest.ResultText(res)))
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(before)/1024, "rss-before-MB")
	b.ReportMetric(float64(vmKB(b, warden.PID(), "VmHWM"))/1024, "rss-peak-MB")
}

// vmKB reads a field (VmRSS, VmHWM) of /proc/<pid>/status, in kB.
func vmKB(b *testing.B, pid int, field string) int64 {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
