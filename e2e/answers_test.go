package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
	"github.com/wardenmcp/warden/upstream"
)

// hugeAnswerFixture starts an HTTP fixture-server whose tool huge_answer
// answers size bytes of text, and returns its URL.
func hugeAnswerFixture(t testing.TB, size int) string {
	t.Helper()
	url, _, _ := httpFixture(t, "-huge-answer", strconv.Itoa(size))
	return url
}

// Answers too large for Warden are refused with a clear error; a write
// whose answer is refused so is an unknown outcome and latches its server.
// Large answers within the bound all get through, many at once, over the
// direct HTTP path and over stdio, to clients of both eras, and once they
// are sent Warden holds none of their room.
func TestLargeAnswers(t *testing.T) {
	const tooLarge, large = upstream.DefaultAnswerMax + 1<<20, 4 << 20
	hugeURL := hugeAnswerFixture(t, tooLarge)
	w := wardentest.Start(t, map[string]any{
		"huge":      map[string]any{"url": hugeURL, "trusted": true},
		"hugewrite": map[string]any{"url": hugeURL, "trusted": true, "tools": map[string]any{"huge_answer": map[string]any{"class": "write"}}},
		"big":       map[string]any{"url": hugeAnswerFixture(t, large), "trusted": true},
		// The clients wait two minutes for four stdio answers in a row, which
		// take more than the default minute under load with the race detector.
		"bigstdio": map[string]any{"command": testenv.BuildBinary(t, fixturePkg), "args": []string{"-huge-answer", strconv.Itoa(large)}, "trusted": true,
			"callTimeout": "2m"},
	})
	for _, s := range []string{"huge", "hugewrite", "big", "bigstdio"} {
		w.WaitReady(t, s)
	}
	cs := w.Connect(t, "/mcp", nil)
	cs2026 := w.ConnectWith(t, "/mcp", nil, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})

	res := wardentest.CallResult(t, cs, "huge__huge_answer", nil)
	if !res.IsError || !strings.Contains(wardentest.ResultText(res), "larger than Warden passes on (64 MiB at most)") {
		t.Fatalf("a read whose answer is too large: %s", wardentest.ResultText(res))
	}
	if l := wlLatches(t, w); len(l) != 0 {
		t.Fatalf("a read latched: %+v", l)
	}
	res = wardentest.CallResult(t, cs, "hugewrite__huge_answer", nil)
	if !res.IsError || res.Meta["warden/outcome"] != "unknown" || !strings.Contains(wardentest.ResultText(res), "warden writes clear hugewrite") {
		t.Fatalf("a write whose answer is too large: %s %v", wardentest.ResultText(res), res.Meta)
	}
	if l := wlLatches(t, w); len(l) != 1 || l[0].Server != "hugewrite" || l[0].Reason != "answer_too_large" {
		t.Fatalf("latches after a write whose answer was too large: %+v", l)
	}

	// Six answers of unknown length over HTTP take more than the bound
	// (each holds room for the largest answer while it is read): some wait.
	var wg sync.WaitGroup
	for i := range 10 {
		tool := "big__huge_answer"
		if i >= 6 {
			tool = "bigstdio__huge_answer"
		}
		client := cs
		if i%2 == 1 {
			client = cs2026
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := client.CallTool(ctx, &mcp.CallToolParams{Name: tool})
			if err != nil || res.IsError || len(wardentest.ResultText(res)) != large {
				t.Errorf("%s: %v, %d bytes of text %.300s", tool, err, len(wardentest.ResultText(res)), wardentest.ResultText(res))
			}
		})
	}
	wg.Wait()
	// Released once each answer is on its way, which its client may see
	// first.
	var m string
	if !wardentest.Poll(10*time.Second, func() bool {
		m = w.Metrics(t)
		return wardentest.MetricValue(m, "warden_answer_bytes_in_flight") == 0
	}) {
		t.Fatalf("answer bytes still held after every answer was sent:\n%s", grepLines(m, "warden_answer"))
	}
}
