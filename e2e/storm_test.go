package e2e

// A kill -9 storm (issue 11): a real `warden serve` is killed with SIGKILL
// over and over while an operator approves and blocks tools (REST and CLI)
// and an agent writes through a slow stdio upstream, and started again on
// the same state dir each time.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// stormKills is how many times the storm kills Warden.
const stormKills = 100

// stormTools are the tools the operator decides on: the first half through
// REST, the rest through the CLI.
var stormTools = []string{"tool_0001", "tool_0002", "tool_0003", "tool_0004", "tool_0005", "tool_0006"}

// stormDecider toggles its tools between blocked and approved, one decision
// at a time, sending a decision again until it is answered (both are
// idempotent, as an operator would retry them).
type stormDecider struct {
	tools  []string
	decide func(tool, status string) bool // reports whether the decision was answered 200 (exit 0)

	mu      sync.Mutex
	acked   map[string]string // tool → the last decision answered
	pending map[string]string // tool → a decision sent and not answered yet
}

func (d *stormDecider) run(ctx context.Context, pause *sync.RWMutex, answered *atomic.Int64) {
	next := map[string]string{}
	for _, tool := range d.tools {
		next[tool] = "blocked"
	}
	for i := 0; ctx.Err() == nil; i++ {
		tool := d.tools[i%len(d.tools)]
		status := next[tool]
		d.mu.Lock()
		d.pending[tool] = status
		d.mu.Unlock()
		pause.RLock()
		ok := d.decide(tool, status)
		pause.RUnlock()
		if !ok {
			i-- // the same decision again, after a sleep that paces the retry (a load loop)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		d.mu.Lock()
		d.acked[tool] = status
		delete(d.pending, tool)
		d.mu.Unlock()
		answered.Add(1)
		if status == "blocked" {
			next[tool] = "approved"
		} else {
			next[tool] = "blocked"
		}
	}
}

// check compares the store with the decisions answered: a tool is as last
// decided, unless a later decision was in flight (then it may be either).
func (d *stormDecider) check(t *testing.T, statuses map[string]string, when string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, tool := range d.tools {
		got, want, maybe := statuses[tool], d.acked[tool], d.pending[tool]
		if want == "" {
			want = "approved" // the trusted server's baseline
		}
		if got != want && got != maybe {
			t.Fatalf("%s: tool %s is %q; the last decision answered was %q (and %q was in flight)", when, tool, got, want, maybe)
		}
	}
}

func TestKill9Storm(t *testing.T) {
	if testing.Short() {
		t.Skip("the kill -9 storm takes about a minute")
	}
	dir := t.TempDir()
	fixtureBin := testenv.BuildBinary(t, fixturePkg)
	d := &wlDaemon{t: t, bin: testenv.BuildBinary(t, "./cmd/warden"), cfg: filepath.Join(dir, "config.json"),
		state: filepath.Join(dir, "state"), listen: "127.0.0.1:" + itoa(testenv.FreePort(t))}
	base := "http://" + d.listen
	apiClient := &http.Client{Timeout: 10 * time.Second}
	var token string // the state dir's, the same at every start
	rest := func(method, path string, body any, out any) (int, error) {
		var rd *bytes.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := apiClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if out != nil && resp.StatusCode == http.StatusOK {
			if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
				return 0, err // cut off mid-answer
			}
		}
		return resp.StatusCode, nil
	}
	mustREST := func(method, path string, body any, out any) {
		t.Helper()
		if code, err := rest(method, path, body, out); err != nil || code != http.StatusOK {
			t.Fatalf("%s %s: %d %v", method, path, code, err)
		}
	}
	statuses := func() map[string]string {
		t.Helper()
		var list []struct{ Name, Status string }
		mustREST("GET", "/v1/servers/s/tools", nil, &list)
		out := map[string]string{}
		for _, x := range list {
			out[x.Name] = x.Status
		}
		return out
	}

	// Each start gets a stats file of its own, so that a dying fixture
	// cannot overwrite the next one's. sh stays between Warden and the
	// fixture, as npx stays before node.
	var trees []testenv.Proc
	start := func(n int) (stats string, wardenPID int) {
		stats = filepath.Join(dir, "out", fmt.Sprintf("stats-%d.json", n))
		if err := os.MkdirAll(filepath.Dir(stats), 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"listen": d.listen, "mcpServers": map[string]any{"s": map[string]any{
			"command": "sh", "args": []string{"-c", "sleep 3600 & " + fixtureBin + " -tools 6 -stats " + stats + "; exit 0"},
			"cwd": filepath.Dir(stats), "trusted": true, "callTimeout": "60s"}}})
		if err := os.WriteFile(d.cfg, b, 0o600); err != nil {
			t.Fatal(err)
		}
		d.serve()
		return stats, d.proc.PID()
	}

	ctx, stopDeciding := context.WithCancel(context.Background())
	defer stopDeciding()
	var pause sync.RWMutex
	var decisions atomic.Int64
	viaREST := &stormDecider{tools: stormTools[:3], acked: map[string]string{}, pending: map[string]string{},
		decide: func(tool, status string) bool {
			path := "/v1/servers/s/tools/approve"
			if status == "blocked" {
				path = "/v1/servers/s/tools/block"
			}
			code, err := rest("POST", path, map[string]any{"tools": []string{tool}}, nil)
			return err == nil && code == http.StatusOK
		}}
	viaCLI := &stormDecider{tools: stormTools[3:], acked: map[string]string{}, pending: map[string]string{},
		decide: func(tool, status string) bool {
			args := []string{"review", "approve", "s", tool, "--yes"}
			if status == "blocked" {
				args = []string{"review", "block", "s", tool}
			}
			return exec.Command(d.bin, append(args, "--config", d.cfg, "--state-dir", d.state)...).Run() == nil
		}}
	var deciders sync.WaitGroup

	began := time.Now()
	var writesSent, writesAnswered int
	var sent map[string]bool // argument hashes of the writes sent to the Warden killed last
	stats, wardenPID := start(0)
	tok, err := os.ReadFile(filepath.Join(d.state, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	token = strings.TrimSpace(string(tok))
	for n := 0; ; n++ {
		var st fixture.Stats
		wardentest.WaitFor(t, 20*time.Second, "the stdio fixture to start", func() bool {
			var ok bool
			st, ok = fixture.ReadStatsFile(stats)
			return ok && st.PID > 0
		})
		// The fixture's own PID is its namespace's: find it by its command line.
		tree := testenv.Descendants(wardenPID)
		if len(tree) < 3 || !slices.ContainsFunc(tree, func(p testenv.Proc) bool { return strings.HasPrefix(p.What, fixtureBin) }) {
			t.Fatalf("start %d: the fixture (its own pid %d), its sh and their sleep are not below Warden (pid %d): %+v", n, st.PID, wardenPID, tree)
		}
		trees = append(trees, tree...)

		if n == 0 {
			// The trusted server's baseline: every tool approved.
			wardentest.WaitFor(t, 20*time.Second, "the baseline", func() bool {
				s := statuses()
				return s[stormTools[0]] == "approved" && s[stormTools[len(stormTools)-1]] == "approved"
			})
			deciders.Go(func() { viaREST.run(ctx, &pause, &decisions) })
			deciders.Go(func() { viaCLI.run(ctx, &pause, &decisions) })
		} else {
			// Nothing answered was lost, and the write in flight at the
			// kill latched the server (the latch names a write sent to the
			// killed Warden). The operator clears it.
			pause.Lock()
			when := fmt.Sprintf("after kill %d", n)
			s := statuses()
			viaREST.check(t, s, when)
			viaCLI.check(t, s, when)
			pause.Unlock()
			var latches []wlLatch
			mustREST("GET", "/v1/writes", nil, &latches)
			found := false
			for _, l := range latches {
				if l.Server != "s" {
					continue
				}
				found = true
				if l.Reason != "warden_interrupted" || l.Tool != fixture.ToolWrite || !sent[l.ArgsSHA256] {
					t.Fatalf("%s: latch %+v is not one of the writes sent to the killed Warden", when, l)
				}
			}
			if !found {
				t.Fatalf("%s: a write was in flight upstream at the kill, but GET /v1/writes = %+v", when, latches)
			}
			mustREST("DELETE", "/v1/writes/s", nil, nil)
		}
		if n == stormKills {
			break
		}

		// The agent: one slow write that is in flight at the kill, then
		// quick writes until the kill.
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(t.Context(),
			&mcp.StreamableClientTransport{Endpoint: base + "/mcp/s", MaxRetries: -1}, wardentest.Session2025)
		if err != nil {
			t.Fatalf("start %d: connect: %v", n, err)
		}
		var mu sync.Mutex
		sent = map[string]bool{}
		answered := 0
		write := func(i int, sleepMS int) error {
			args := map[string]any{"key": fmt.Sprintf("k%d", i%3), "value": fmt.Sprintf("start %d write %d", n, i), "sleep_ms": sleepMS}
			b, _ := json.Marshal(args)
			sum := sha256.Sum256(b)
			mu.Lock()
			sent[hex.EncodeToString(sum[:])] = true
			mu.Unlock()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: args})
			if err != nil {
				return err
			}
			if res.IsError || wardentest.ResultText(res) != "stored" {
				t.Errorf("start %d: write %d answered isError=%v %q", n, i, res.IsError, wardentest.ResultText(res))
			}
			mu.Lock()
			answered++
			mu.Unlock()
			return nil
		}
		var writers sync.WaitGroup
		writers.Go(func() {
			if err := write(0, 60_000); err == nil {
				t.Errorf("start %d: the slow write was answered before the kill", n)
			}
		})
		wardentest.WaitFor(t, 20*time.Second, "the slow write to reach the upstream", func() bool {
			st, _ := fixture.ReadStatsFile(stats)
			return st.WriteDispatches >= 1
		})
		writers.Go(func() {
			for i := 1; write(i, rand.IntN(20)) == nil; i++ {
			}
		})
		time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond) // the kill lands anywhere in the quick writes and the decisions

		if err := d.proc.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := d.proc.Wait(10 * time.Second); err == nil {
			t.Fatal("warden exited cleanly after SIGKILL?")
		}
		writers.Wait()
		cs.Close()
		writesSent += len(sent)
		writesAnswered += answered
		stats, wardenPID = start(n + 1)
	}

	stopDeciding()
	deciders.Wait()
	s := statuses()
	viaREST.check(t, s, "at the end")
	viaCLI.check(t, s, "at the end")
	if err := d.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	// Only polling tells when processes that are not ours have ended.
	var left []testenv.Proc
	if !wardentest.Poll(10*time.Second, func() bool {
		left = left[:0]
		for _, p := range trees {
			if p.Alive() {
				left = append(left, p)
			}
		}
		return len(left) == 0
	}) {
		for _, p := range left {
			if p.Alive() {
				syscall.Kill(p.PID, syscall.SIGKILL) // not left running after the test
			}
		}
		t.Fatalf("stdio server processes outlived their Warden: %+v", left)
	}
	t.Logf("%d kills in %s: %d decisions answered, %d writes sent (%d answered), a write in flight upstream at every kill, %d stdio server processes gone",
		stormKills, time.Since(began).Round(time.Second), decisions.Load(), writesSent, writesAnswered, len(trees))
}
