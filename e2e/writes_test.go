package e2e

// End-to-end tests of issue 4: write classes, the unknown-outcome write latch,
// destructive-call confirmation and the activity log, against the Go SDK
// fixture upstream over stdio (a fixture-server process) and streamable HTTP.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

var wlKinds = []string{"stdio", "http"}

// wlUpstream is a fixture upstream for a write test.
type wlUpstream struct {
	kind  string
	f     *fixture.Fixture // in-process HTTP fixture, or nil
	stats string           // -stats file of a fixture-server process, or ""
	proc  *testenv.Process // fixture-server started by the test (HTTP process), or nil
	cfg   map[string]any   // the mcpServers entry
}

// wlNewUpstream makes a stdio fixture-server (started by Warden) or an
// in-process HTTP fixture; extra is merged into the server's config.
func wlNewUpstream(t *testing.T, kind string, extra map[string]any) *wlUpstream {
	t.Helper()
	u := &wlUpstream{kind: kind}
	switch kind {
	case "stdio":
		u.stats = filepath.Join(t.TempDir(), "stats.json")
		// Its cwd, where its stats are: a server writes its cwd, not any path.
		u.cfg = map[string]any{"command": testenv.BuildBinary(t, fixturePkg), "args": []string{"-stats", u.stats}, "trusted": true,
			"cwd": filepath.Dir(u.stats)}
	case "http":
		u.f = fixture.NewServer(fixture.Options{})
		u.cfg = map[string]any{"url": u.f.Serve(t), "trusted": true}
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	maps.Copy(u.cfg, extra)
	return u
}

// wlProcUpstream makes an upstream that runs in its own process, so the test
// can kill it: over stdio started by Warden, over HTTP started by the test.
func wlProcUpstream(t *testing.T, kind string, extra map[string]any) *wlUpstream {
	t.Helper()
	if kind == "stdio" {
		return wlNewUpstream(t, kind, extra)
	}
	u := &wlUpstream{kind: kind}
	var url string
	url, u.proc, u.stats = httpFixture(t)
	u.cfg = map[string]any{"url": url, "trusted": true}
	maps.Copy(u.cfg, extra)
	return u
}

// Stats is the fixture's current counters (for a process: its last -stats
// file, which it rewrites before answering).
func (u *wlUpstream) Stats(t *testing.T) fixture.Stats {
	t.Helper()
	if u.f != nil {
		return u.f.Stats()
	}
	st, ok := fixture.ReadStatsFile(u.stats)
	if !ok {
		t.Fatalf("no fixture stats in %s", u.stats)
	}
	return st
}

func (u *wlUpstream) waitStats(t *testing.T, what string, cond func(fixture.Stats) bool) {
	t.Helper()
	wardentest.WaitFor(t, 20*time.Second, what, func() bool {
		if u.f != nil {
			return cond(u.f.Stats())
		}
		st, ok := fixture.ReadStatsFile(u.stats)
		return ok && cond(st)
	})
}

// wlLatch is an entry of GET /v1/writes.
type wlLatch struct {
	Server     string    `json:"server"`
	Tool       string    `json:"tool"`
	ArgsSHA256 string    `json:"args_sha256"`
	At         time.Time `json:"at"`
	Reason     string    `json:"reason"`
	Surface    string    `json:"surface"`
}

func wlLatches(t *testing.T, w *wardentest.Warden) []wlLatch {
	t.Helper()
	var out []wlLatch
	if code := w.API(t, "GET", "/v1/writes", nil, &out); code != http.StatusOK {
		t.Fatalf("GET /v1/writes: status %d", code)
	}
	return out
}

// wlWantLatch checks that exactly one latch exists, for server s and the call
// of tool with args, for reason.
func wlWantLatch(t *testing.T, w *wardentest.Warden, tool string, args map[string]any, reason, surface string) wlLatch {
	t.Helper()
	ls := wlLatches(t, w)
	if len(ls) != 1 {
		t.Fatalf("GET /v1/writes = %+v, want exactly one latch", ls)
	}
	l := ls[0]
	if l.Server != "s" || l.Tool != tool || l.Reason != reason || l.Surface != surface || l.ArgsSHA256 != wlArgsHash(t, args) || l.At.IsZero() {
		t.Fatalf("latch = %+v, want server s, tool %s, reason %s, surface %s, args_sha256 %s", l, tool, reason, surface, wlArgsHash(t, args))
	}
	return l
}

// wlArgsHash is the SHA-256 of the canonical JSON of args (sorted keys, no
// spaces: what encoding/json writes for these simple maps).
func wlArgsHash(t *testing.T, args map[string]any) string {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func wlMarker(t *testing.T) string {
	b := make([]byte, 8)
	rand.Read(b)
	return "MARKER" + hex.EncodeToString(b)
}

func wlOutcome(res *mcp.CallToolResult) string {
	s, _ := res.Meta["warden/outcome"].(string)
	return s
}

func wlMustWrite(t *testing.T, cs *mcp.ClientSession, args map[string]any) {
	t.Helper()
	res := wardentest.CallResult(t, cs, fixture.ToolWrite, args)
	if res.IsError || wardentest.ResultText(res) != "stored" {
		t.Fatalf("write %v: want it stored, got isError=%v _meta=%v %q", args, res.IsError, res.Meta, wardentest.ResultText(res))
	}
}

// wlNoMarkerInState fails if any file in the state dir holds marker. hash
// must be in the store, to show the test looks at the file that holds the
// call records.
func wlNoMarkerInState(t *testing.T, stateDir, marker, hash string) {
	t.Helper()
	db, err := os.ReadFile(filepath.Join(stateDir, "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(db, []byte(hash)) {
		t.Fatalf("warden.db does not hold the argument hash %s: not the store of latches and activity?", hash)
	}
	filepath.WalkDir(stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(marker)) {
			t.Errorf("%s contains a raw argument (marker %s)", path, marker)
		}
		return nil
	})
}

// A write that passes callTimeout latches its server: the next writes are
// refused and never reach the upstream, reads still work, the latch survives a
// restart, and only an operator clears it. A read that times out records
// nothing. The store never holds the raw arguments.
func TestWriteLatchTimeout(t *testing.T) {
	for _, kind := range wlKinds {
		t.Run(kind, func(t *testing.T) {
			u := wlNewUpstream(t, kind, map[string]any{"callTimeout": "300ms"})
			w := wardentest.Start(t, map[string]any{"s": u.cfg})
			w.WaitReady(t, "s")
			cs := w.Connect(t, "/mcp/s", nil)
			marker := wlMarker(t)

			// A read that times out is never recorded.
			res := wardentest.CallResult(t, cs, fixture.ToolRead, map[string]any{"key": "k", "sleep_ms": 5000})
			if !res.IsError {
				t.Fatalf("a read past callTimeout must fail, got %q", wardentest.ResultText(res))
			}
			if ls := wlLatches(t, w); len(ls) != 0 {
				t.Fatalf("a read that timed out latched: %+v", ls)
			}
			wlMustWrite(t, cs, map[string]any{"key": "before", "value": marker + "-stored-before"})

			slow := map[string]any{"key": "k", "value": marker + "-latched", "sleep_ms": 5000}
			start := time.Now()
			res = wardentest.CallResult(t, cs, fixture.ToolWrite, slow)
			if !res.IsError || wlOutcome(res) != "unknown" || !strings.Contains(wardentest.ResultText(res), "warden writes clear s") {
				t.Fatalf("timed-out write: want isError with _meta warden/outcome unknown naming the clear command, got isError=%v _meta=%v %q", res.IsError, res.Meta, wardentest.ResultText(res))
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Fatalf("the write was not cut at callTimeout: %s", d)
			}
			latch := wlWantLatch(t, w, fixture.ToolWrite, slow, "timeout", "mcp/s")
			if latch.At.Before(start.Add(-time.Second)) || latch.At.After(time.Now().Add(time.Second)) {
				t.Fatalf("latch time %s is not the time of the call (%s)", latch.At, start)
			}
			// Warden told the upstream to stop the call (notifications/cancelled).
			u.waitStats(t, "the upstream to see the timed-out write cancelled", func(s fixture.Stats) bool { return s.WritesCancelled == 1 })
			dispatched := u.Stats(t).WriteDispatches
			if dispatched != 2 {
				t.Fatalf("write dispatches = %d, want 2", dispatched)
			}

			// Further writes and destructive calls are refused and not sent.
			for i := range 3 {
				res = wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k2", "value": fmt.Sprintf("%s-refused-%d", marker, i)})
				wardentest.WantRefusal(t, res, "WRITES_LATCHED", "warden writes clear s", fixture.ToolWrite, "timeout")
			}
			wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolDelete, map[string]any{"key": "before"}), "WRITES_LATCHED", "warden writes clear s")
			// Reads still work.
			if got := wardentest.CallText(t, cs, fixture.ToolRead, map[string]any{"key": "before"}); got != marker+"-stored-before" {
				t.Fatalf("read while latched = %q", got)
			}
			if st := u.Stats(t); st.WriteDispatches != dispatched || st.Calls[fixture.ToolDelete] != 0 {
				t.Fatalf("refused calls reached the upstream: write dispatches %d (want %d), delete calls %d", st.WriteDispatches, dispatched, st.Calls[fixture.ToolDelete])
			}
			// Refused calls are not recorded again: still the first record.
			if ls := wlLatches(t, w); len(ls) != 1 || !ls[0].At.Equal(latch.At) {
				t.Fatalf("latches after refused calls = %+v, want only %+v", ls, latch)
			}

			// The latch survives a restart. (Clients are closed first: a
			// connected client holds a clean stop for 5s.)
			cs.Close()
			w.Stop()
			w = wardentest.StartWith(t, w.ConfigPath, w.StateDir)
			w.WaitReady(t, "s")
			cs = w.Connect(t, "/mcp/s", nil)
			base := u.Stats(t).WriteDispatches // a stdio fixture is a new process
			wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k3", "value": marker + "-refused-after-restart"}), "WRITES_LATCHED", "warden writes clear s")
			if ls := wlLatches(t, w); len(ls) != 1 || ls[0] != latch {
				t.Fatalf("latches after restart = %+v, want %+v", ls, latch)
			}
			if n := u.Stats(t).WriteDispatches; n != base {
				t.Fatalf("a write reached the upstream after restart while latched (%d dispatches, want %d)", n, base)
			}

			// The operator clears it; then writes go through.
			var cleared struct {
				Cleared bool
				Latch   *wlLatch
			}
			if code := w.API(t, "DELETE", "/v1/writes/s", nil, &cleared); code != http.StatusOK || !cleared.Cleared || cleared.Latch == nil || cleared.Latch.Tool != fixture.ToolWrite {
				t.Fatalf("DELETE /v1/writes/s = %d %+v", code, cleared)
			}
			if ls := wlLatches(t, w); len(ls) != 0 {
				t.Fatalf("latches after clear = %+v", ls)
			}
			wlMustWrite(t, cs, map[string]any{"key": "after", "value": marker + "-stored-after"})
			if n := u.Stats(t).WriteDispatches; n != base+1 {
				t.Fatalf("write dispatches after clear = %d, want %d", n, base+1)
			}

			cs.Close()
			w.Stop()
			wlNoMarkerInState(t, w.StateDir, marker, latch.ArgsSHA256)
		})
	}
}

// wlDaemon is a real `warden serve` over one upstream named s, which a test
// can kill and start again on the same state dir.
type wlDaemon struct {
	t               *testing.T
	bin, cfg, state string
	listen          string
	proc            *testenv.Process
}

func wlNewDaemon(t *testing.T, u *wlUpstream) *wlDaemon {
	dir := t.TempDir()
	d := &wlDaemon{t: t, bin: testenv.BuildBinary(t, "./cmd/warden"), cfg: filepath.Join(dir, "config.json"),
		state: filepath.Join(dir, "state"), listen: "127.0.0.1:" + itoa(testenv.FreePort(t))}
	b, _ := json.Marshal(map[string]any{"listen": d.listen, "mcpServers": map[string]any{"s": u.cfg}})
	if err := os.WriteFile(d.cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	d.serve()
	return d
}

func (d *wlDaemon) serve() {
	d.proc = testenv.StartProcess(d.t, exec.Command(d.bin, "serve", "--config", d.cfg, "--state-dir", d.state))
	testenv.WaitHTTP(d.t, "http://"+d.listen+"/healthz", 20*time.Second)
}

func (d *wlDaemon) kill9() {
	t := d.t
	if err := d.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := d.proc.Wait(10 * time.Second); err == nil {
		t.Fatal("warden exited cleanly after SIGKILL?")
	}
	d.proc.Stop() // what is left of its process group
}

func (d *wlDaemon) cli(args ...string) string {
	d.t.Helper()
	out, err := exec.Command(d.bin, append(args, "--config", d.cfg, "--state-dir", d.state)...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 { // done, something is still held
		err = nil
	}
	if err != nil {
		d.t.Fatalf("warden %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (d *wlDaemon) latches() []wlLatch {
	var listed []wlLatch
	if err := json.Unmarshal([]byte(d.cli("writes", "--json")), &listed); err != nil {
		d.t.Fatal(err)
	}
	return listed
}

// connect opens a client session on /mcp/s once the upstream answers reads.
func (d *wlDaemon) connect() *mcp.ClientSession {
	t := d.t
	cs := wardentest.ConnectURL(t, "http://"+d.listen+"/mcp/s", nil, nil)
	wardentest.WaitFor(t, 20*time.Second, "the upstream to answer a read", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolRead, Arguments: map[string]any{"key": "k"}})
		return err == nil && !res.IsError
	})
	return cs
}

// The latch survives `kill -9` of a real `warden serve`; `warden writes`
// lists it and `warden writes clear` lifts it.
func TestWriteLatchSurvivesKill9(t *testing.T) {
	for _, kind := range wlKinds {
		t.Run(kind, func(t *testing.T) {
			u := wlNewUpstream(t, kind, map[string]any{"callTimeout": "300ms"})
			d := wlNewDaemon(t, u)
			cs := d.connect()
			marker := wlMarker(t)
			slow := map[string]any{"key": "k", "value": marker, "sleep_ms": 5000}
			if res := wardentest.CallResult(t, cs, fixture.ToolWrite, slow); wlOutcome(res) != "unknown" {
				t.Fatalf("want an unknown outcome, got _meta=%v %q", res.Meta, wardentest.ResultText(res))
			}
			listed := d.latches()
			if len(listed) != 1 || listed[0].Server != "s" || listed[0].Reason != "timeout" || listed[0].ArgsSHA256 != wlArgsHash(t, slow) {
				t.Fatalf("warden writes --json = %+v", listed)
			}

			d.kill9()
			cs.Close()
			d.serve()
			cs = d.connect()
			wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": marker + "-again"}), "WRITES_LATCHED", "warden writes clear s")
			if out := d.cli("writes"); !strings.Contains(out, "write_value") || !strings.Contains(out, "timeout") {
				t.Fatalf("warden writes after kill -9:\n%s", out)
			}

			if out := d.cli("writes", "clear", "s", "--yes"); !strings.Contains(out, "cleared s") {
				t.Fatalf("warden writes clear s:\n%s", out)
			}
			wlMustWrite(t, cs, map[string]any{"key": "k", "value": marker + "-after-clear"})
			if out := d.cli("writes"); !strings.Contains(out, "no latched writes") {
				t.Fatalf("warden writes after clear:\n%s", out)
			}
			cs.Close()
			d.proc.Stop()
			wlNoMarkerInState(t, d.state, marker, listed[0].ArgsSHA256)
		})
	}
}

// A write in flight when Warden is killed has an unknown outcome: the next
// start latches its server (reason warden_interrupted, the call's argument
// hash). Writes that had finished before leave nothing behind.
func TestWriteInFlightAtKill9Latches(t *testing.T) {
	for _, kind := range wlKinds {
		t.Run(kind, func(t *testing.T) {
			u := wlNewUpstream(t, kind, map[string]any{"callTimeout": "60s"})
			d := wlNewDaemon(t, u)
			cs := d.connect()
			marker := wlMarker(t)
			wlMustWrite(t, cs, map[string]any{"key": "k", "value": marker + "-done"})
			// A sleep: the finished write is struck off meanwhile, in a batch
			// of the daemon's own, which nothing outside it shows.
			time.Sleep(300 * time.Millisecond)
			slow := map[string]any{"key": "k", "value": marker + "-in-flight", "sleep_ms": 3000}
			go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: slow})
			u.waitStats(t, "the write to reach the upstream", func(s fixture.Stats) bool { return s.WriteDispatches == 2 })

			d.kill9()
			cs.Close()
			d.serve()
			listed := d.latches()
			if len(listed) != 1 || listed[0].Server != "s" || listed[0].Tool != fixture.ToolWrite ||
				listed[0].Reason != "warden_interrupted" || listed[0].ArgsSHA256 != wlArgsHash(t, slow) {
				t.Fatalf("warden writes --json after kill -9 mid-write = %+v", listed)
			}
			cs = d.connect()
			wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": marker + "-again"}),
				"WRITES_LATCHED", "warden writes clear s", "warden_interrupted")
			cs.Close()
			d.proc.Stop()
			wlNoMarkerInState(t, d.state, marker, listed[0].ArgsSHA256)
		})
	}
}

// A client that cancels a dispatched write latches the server (reason
// cancelled), and Warden passes the cancellation upstream.
func TestWriteLatchClientCancel(t *testing.T) {
	for _, kind := range wlKinds {
		t.Run(kind, func(t *testing.T) {
			u := wlNewUpstream(t, kind, nil)
			w := wardentest.Start(t, map[string]any{"s": u.cfg})
			w.WaitReady(t, "s")
			cs := w.Connect(t, "/mcp/s", nil)
			args := map[string]any{"key": "k", "value": "v", "sleep_ms": 20000}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: args})
				errc <- err
			}()
			u.waitStats(t, "the write to reach the upstream", func(s fixture.Stats) bool { return s.WriteDispatches == 1 })
			if ls := wlLatches(t, w); len(ls) != 0 {
				t.Fatalf("latched before anything went wrong: %+v", ls)
			}
			cancel()
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("the cancelled call succeeded")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled call did not return")
			}
			wardentest.WaitFor(t, 10*time.Second, "the latch", func() bool { return len(wlLatches(t, w)) > 0 })
			wlWantLatch(t, w, fixture.ToolWrite, args, "cancelled", "mcp/s")
			u.waitStats(t, "the upstream to see the cancellation", func(s fixture.Stats) bool { return s.WritesCancelled == 1 })
			wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v2"}), "WRITES_LATCHED", "warden writes clear s", "cancelled")
			if n := u.Stats(t).WriteDispatches; n != 1 {
				t.Fatalf("write dispatches = %d, want 1", n)
			}
		})
	}
}

// An upstream process killed during a write latches the server (reason
// upstream_lost).
func TestWriteLatchUpstreamKilled(t *testing.T) {
	for _, kind := range wlKinds {
		t.Run(kind, func(t *testing.T) {
			u := wlProcUpstream(t, kind, nil)
			w := wardentest.Start(t, map[string]any{"s": u.cfg})
			w.WaitReady(t, "s")
			cs := w.Connect(t, "/mcp/s", nil)
			args := map[string]any{"key": "k", "value": "v", "sleep_ms": 20000}
			resc := make(chan *mcp.CallToolResult, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: args})
				if err != nil {
					res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "call error: " + err.Error()}}}
				}
				resc <- res
			}()
			u.waitStats(t, "the write to reach the upstream", func(s fixture.Stats) bool { return s.WriteDispatches == 1 })
			pid := u.Stats(t).PID
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			var res *mcp.CallToolResult
			select {
			case res = <-resc:
			case <-time.After(20 * time.Second):
				t.Fatal("the write did not return after its upstream was killed")
			}
			if !res.IsError || wlOutcome(res) != "unknown" {
				t.Fatalf("want an unknown outcome, got isError=%v _meta=%v %q", res.IsError, res.Meta, wardentest.ResultText(res))
			}
			wlWantLatch(t, w, fixture.ToolWrite, args, "upstream_lost", "mcp/s")
			if kind == "stdio" {
				// Reconnected to a new process: writes are still refused.
				wardentest.WaitFor(t, 30*time.Second, "a new upstream process", func() bool {
					st, ok := fixture.ReadStatsFile(u.stats)
					return ok && st.PID != pid
				})
				w.WaitReady(t, "s")
				wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v2"}), "WRITES_LATCHED", "upstream_lost")
				if n := u.Stats(t).WriteDispatches; n != 0 {
					t.Fatalf("the new upstream process got %d writes while latched", n)
				}
			}
		})
	}
}

// A write to an upstream that is down before the call is not sent, answers
// UPSTREAM_UNAVAILABLE and records nothing.
func TestWriteToDownUpstreamRecordsNothing(t *testing.T) {
	for _, kind := range wlKinds {
		t.Run(kind, func(t *testing.T) {
			var u *wlUpstream
			down := filepath.Join(t.TempDir(), "down")
			if kind == "stdio" {
				// A stdio server that fails to start once "down" exists.
				u = wlNewUpstream(t, kind, nil)
				u.cfg["command"] = "sh"
				u.cfg["args"] = []string{"-c", fmt.Sprintf("test -e %s && exit 1; exec %s -stats %s", down, testenv.BuildBinary(t, fixturePkg), u.stats)}
			} else {
				u = wlProcUpstream(t, kind, nil)
			}
			w := wardentest.Start(t, map[string]any{"s": u.cfg})
			w.WaitReady(t, "s")
			cs := w.Connect(t, "/mcp/s", nil)
			wlMustWrite(t, cs, map[string]any{"key": "k", "value": "v"})

			if kind == "stdio" {
				if err := os.WriteFile(down, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Kill(u.Stats(t).PID, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				wardentest.WaitFor(t, 20*time.Second, "the server in backoff", func() bool {
					c, _ := w.D.Gateway().Upstream("s")
					return c.Connection().State == "backoff"
				})
			} else {
				// The HTTP upstream's port is closed now. (A moment for Warden's
				// HTTP client to drop its idle connection to the dead process: a
				// sleep, as nothing outside Warden shows when it has.)
				u.proc.Kill()
				time.Sleep(200 * time.Millisecond)
			}
			for range 2 {
				res := wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v2"})
				wardentest.WantRefusal(t, res, "UPSTREAM_UNAVAILABLE")
			}
			if ls := wlLatches(t, w); len(ls) != 0 {
				t.Fatalf("a write that was never sent latched: %+v", ls)
			}
			if n := u.Stats(t).WriteDispatches; n != 1 {
				t.Fatalf("write dispatches = %d, want 1", n)
			}
		})
	}
}

// wlResumable is an HTTP fixture whose streams can be resumed (an event store,
// protocol 2025-11-25). A write_value call whose key is "break" has its SSE
// response stream closed by the server right away; the Go SDK client then
// resumes it with GET and Last-Event-ID: a real transport-level retry.
// failResume, if set, answers resumption GETs with that status.
type wlResumable struct {
	f          *fixture.Fixture
	url        string
	resumes    atomic.Int64
	failResume atomic.Int64
}

func wlNewResumable(t *testing.T) *wlResumable {
	r := &wlResumable{f: fixture.NewServer(fixture.Options{ProtocolVersions: []string{"2025-11-25"}})}
	r.f.Server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ctr, ok := req.(*mcp.CallToolRequest); ok && ctr.Params.Name == fixture.ToolWrite && bytes.Contains(ctr.Params.Arguments, []byte(`"key":"break"`)) {
				if ctr.Extra == nil || ctr.Extra.CloseSSEStream == nil {
					return nil, fmt.Errorf("fixture: cannot close the stream")
				}
				ctr.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 20 * time.Millisecond})
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return r.f.Server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" {
			r.resumes.Add(1)
			if code := r.failResume.Load(); code != 0 {
				http.Error(w, http.StatusText(int(code)), int(code))
				return
			}
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(func() {
		for ss := range r.f.Server.Sessions() {
			ss.Close()
		}
		ts.CloseClientConnections()
		ts.Close()
	})
	r.url = ts.URL + "/mcp"
	return r
}

// A write whose response stream broke after dispatch but was recovered by the
// transport's resumption records nothing; one whose resumption fails records
// exactly once, and later writes are refused, not recorded.
func TestWriteTransportRetry(t *testing.T) {
	t.Run("recovered", func(t *testing.T) {
		r := wlNewResumable(t)
		w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": r.url, "trusted": true, "callTimeout": "10s"}})
		w.WaitReady(t, "s")
		cs := w.Connect(t, "/mcp/s", nil)
		wlMustWrite(t, cs, map[string]any{"key": "break", "value": "v", "sleep_ms": 300})
		if r.resumes.Load() == 0 {
			t.Fatal("the stream was not resumed: the test did not exercise a transport retry")
		}
		if n := r.f.WriteDispatches(); n != 1 {
			t.Fatalf("write dispatches = %d, want 1", n)
		}
		if ls := wlLatches(t, w); len(ls) != 0 {
			t.Fatalf("a call recovered by the transport latched: %+v", ls)
		}
		wlMustWrite(t, cs, map[string]any{"key": "k", "value": "v"})
	})
	for _, code := range []int{http.StatusInternalServerError, http.StatusNotFound} {
		t.Run(fmt.Sprintf("resume answered %d", code), func(t *testing.T) {
			r := wlNewResumable(t)
			r.failResume.Store(int64(code))
			w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": r.url, "trusted": true, "callTimeout": "10s"}})
			w.WaitReady(t, "s")
			cs := w.Connect(t, "/mcp/s", nil)
			args := map[string]any{"key": "break", "value": "v", "sleep_ms": 100}
			res := wardentest.CallResult(t, cs, fixture.ToolWrite, args)
			if r.resumes.Load() == 0 {
				t.Fatal("no resumption was tried")
			}
			if !res.IsError || wlOutcome(res) != "unknown" {
				t.Fatalf("a write sent upstream whose answer was lost must have an unknown outcome, got isError=%v _meta=%v %q", res.IsError, res.Meta, wardentest.ResultText(res))
			}
			latch := wlWantLatch(t, w, fixture.ToolWrite, args, "upstream_lost", "mcp/s")
			w.WaitReady(t, "s")
			for range 3 {
				res := wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v"})
				if client.Refusal(res) != "WRITES_LATCHED" && client.Refusal(res) != "UPSTREAM_UNAVAILABLE" {
					t.Fatalf("write after the latch: want it refused, got isError=%v _meta=%v %q", res.IsError, res.Meta, wardentest.ResultText(res))
				}
			}
			if ls := wlLatches(t, w); len(ls) != 1 || ls[0] != latch {
				t.Fatalf("latches = %+v, want exactly the first record %+v", ls, latch)
			}
			if n := r.f.WriteDispatches(); n != 1 {
				t.Fatalf("write dispatches = %d, want 1", n)
			}
		})
	}
}

// 50 concurrent writes while one of them times out: exactly one record, and
// no write reaches the upstream once the record exists.
func TestWriteLatchConcurrent(t *testing.T) {
	for _, kind := range wlKinds {
		t.Run(kind, func(t *testing.T) {
			u := wlNewUpstream(t, kind, map[string]any{"callTimeout": "1s"})
			w := wardentest.Start(t, map[string]any{"s": u.cfg})
			w.WaitReady(t, "s")
			cs := w.Connect(t, "/mcp/s", nil)

			type result struct {
				res        *mcp.CallToolResult
				err        error
				start, end time.Time
			}
			const n = 50
			results := make([]result, n)
			call := func(i int, args map[string]any) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				r := &results[i]
				r.start = time.Now()
				r.res, r.err = cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: args})
				r.end = time.Now()
			}
			slow := map[string]any{"key": "slow", "value": "v", "sleep_ms": 10000}
			var wg sync.WaitGroup
			wg.Go(func() { call(0, slow) })
			u.waitStats(t, "the slow write to reach the upstream", func(s fixture.Stats) bool { return s.WriteDispatches == 1 })
			// 40 writes start together 0.7s into the slow one's 1s: more than
			// Warden's per-server concurrency, so some are in flight (400ms
			// each) when it times out and others wait for a slot until after
			// the latch exists. The last 9 start, spread, after the timeout.
			for i := 1; i < n; i++ {
				delay := 700 * time.Millisecond
				if i > 40 {
					delay = 1100*time.Millisecond + time.Duration(i-40)*50*time.Millisecond
				}
				wg.Go(func() {
					time.Sleep(delay) // the schedule above: staggered starts
					call(i, map[string]any{"key": fmt.Sprintf("k%02d", i), "value": "v", "sleep_ms": 400})
				})
			}
			wg.Wait()

			if r := results[0]; r.err != nil || !r.res.IsError || wlOutcome(r.res) != "unknown" {
				t.Fatalf("slow write: want an unknown outcome, got %v %+v", r.err, r.res)
			}
			latched := results[0].end // the record exists by the time its call answered
			ok, refused := 0, 0
			for i, r := range results[1:] {
				switch {
				case r.err != nil:
					t.Fatalf("write %d: %v", i+1, r.err)
				case !r.res.IsError && wardentest.ResultText(r.res) == "stored":
					ok++
					if r.start.After(latched) {
						t.Errorf("write %d started %s after the latch existed and went through", i+1, r.start.Sub(latched))
					}
				case client.Refusal(r.res) == "WRITES_LATCHED":
					refused++
				default:
					t.Fatalf("write %d: want stored or WRITES_LATCHED, got _meta=%v %q", i+1, r.res.Meta, wardentest.ResultText(r.res))
				}
			}
			if ok == 0 || refused == 0 {
				t.Fatalf("%d writes went through and %d were refused: the test did not race writes against the latch", ok, refused)
			}
			wlWantLatch(t, w, fixture.ToolWrite, slow, "timeout", "mcp/s")
			st := u.Stats(t)
			if st.WriteDispatches != int64(1+ok) || st.WritesApplied != int64(ok) {
				t.Fatalf("upstream saw %d writes and applied %d; want %d and %d (%d refused)", st.WriteDispatches, st.WritesApplied, 1+ok, ok, refused)
			}
			if len(st.WriteDispatchTimes) != 1+ok {
				t.Fatalf("%d dispatch times for %d dispatches", len(st.WriteDispatchTimes), 1+ok)
			}
			for i, at := range st.WriteDispatchTimes {
				if at.After(latched) {
					t.Errorf("a write reached the upstream %s after the latch was recorded (dispatch %d)", at.Sub(latched), i)
				}
			}
			t.Logf("%d went through, %d refused", ok, refused)
		})
	}
}

// With confirmDestructive, a destructive call runs only when the person
// accepts through the client's elicitation; otherwise it is refused with
// CONFIRMATION_DECLINED and the upstream never sees it.
func TestDestructiveConfirmation(t *testing.T) {
	for _, kind := range wlKinds {
		t.Run(kind, func(t *testing.T) {
			u := wlNewUpstream(t, kind, map[string]any{"confirmDestructive": true})
			w := wardentest.Start(t, map[string]any{"s": u.cfg})
			w.WaitReady(t, "s")
			var mu sync.Mutex
			var asked []string
			answer := func(action string, content map[string]any) *mcp.ClientOptions {
				return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: action, Content: content}, nil
				}}
			}
			deletes := func() int64 { return u.Stats(t).Calls[fixture.ToolDelete] }
			questions := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return append([]string(nil), asked...)
			}

			yes := w.Connect(t, "/mcp/s", answer("accept", map[string]any{"confirm": true}))
			res := wardentest.CallResult(t, yes, fixture.ToolDelete, map[string]any{"key": "victim"})
			if res.IsError {
				t.Fatalf("accepted delete failed: _meta=%v %q", res.Meta, wardentest.ResultText(res))
			}
			if n := deletes(); n != 1 {
				t.Fatalf("delete_value calls upstream = %d, want 1", n)
			}
			if q := questions(); len(q) != 1 || !strings.Contains(q[0], fixture.ToolDelete) || !strings.Contains(q[0], `"s"`) || !strings.Contains(q[0], "victim") {
				t.Fatalf("elicitation messages = %q, want one naming the server, the tool and the arguments", q)
			}
			// A write is not destructive: nobody is asked.
			wlMustWrite(t, yes, map[string]any{"key": "k", "value": "v"})
			if q := questions(); len(q) != 1 {
				t.Fatalf("a write asked for confirmation: %q", q)
			}

			for _, c := range []struct {
				name string
				opts *mcp.ClientOptions
			}{
				{"decline", answer("decline", nil)},
				{"cancel", answer("cancel", nil)},
				{"accept without confirm", answer("accept", map[string]any{"confirm": false})},
				{"accept with nothing ticked", answer("accept", map[string]any{})},
				{"no elicitation capability", nil},
			} {
				cs := w.Connect(t, "/mcp/s", c.opts)
				res := wardentest.CallResult(t, cs, fixture.ToolDelete, map[string]any{"key": "victim"})
				if !res.IsError || client.Refusal(res) != "CONFIRMATION_DECLINED" {
					t.Fatalf("%s: want a CONFIRMATION_DECLINED refusal, got isError=%v _meta=%v %q", c.name, res.IsError, res.Meta, wardentest.ResultText(res))
				}
				if n := deletes(); n != 1 {
					t.Fatalf("%s: the upstream saw the refused delete (%d calls)", c.name, n)
				}
			}
			if ls := wlLatches(t, w); len(ls) != 0 {
				t.Fatalf("refusals latched: %+v", ls)
			}
		})
	}
}

// wlActivity is an entry of GET /v1/activity.
type wlActivity struct {
	At            time.Time `json:"at"`
	Surface       string    `json:"surface"`
	Server        string    `json:"server"`
	Tool          string    `json:"tool"`
	Class         string    `json:"class"`
	ArgsSHA256    string    `json:"args_sha256"`
	Outcome       string    `json:"outcome"`
	Code          string    `json:"code"`
	LatencyMicros int64     `json:"latency_micros"`
}

func wlActivityOf(t *testing.T, w *wardentest.Warden, query string) []wlActivity {
	t.Helper()
	var out []wlActivity
	if code := w.API(t, "GET", "/v1/activity"+query, nil, &out); code != http.StatusOK {
		t.Fatalf("GET /v1/activity%s: status %d", query, code)
	}
	return out
}

func wlStartConfig(t *testing.T, cfg map[string]any) *wardentest.Warden {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return wardentest.StartWith(t, path, filepath.Join(dir, "state"))
}

// The activity log has an entry for every call: ok, error, refused (with its
// code) and unknown, over stdio and HTTP, through GET /v1/activity and
// `warden activity`. A failing call is an error, not a latch.
func TestActivityOutcomes(t *testing.T) {
	ups := map[string]*wlUpstream{}
	servers := map[string]any{}
	for _, kind := range wlKinds {
		ups[kind] = wlNewUpstream(t, kind, map[string]any{"callTimeout": "300ms"})
		servers[kind] = ups[kind].cfg
	}
	w := wlStartConfig(t, map[string]any{"mcpServers": servers})
	marker := wlMarker(t)
	type call struct {
		tool    string
		args    map[string]any
		outcome string
		code    string
	}
	calls := []call{
		{fixture.ToolWrite, map[string]any{"key": "k", "value": marker + "-ok"}, "ok", ""},
		// (Another key: the fixture's error quotes what its key holds, and
		// the activity entry keeps what an error said.)
		{fixture.ToolWrite, map[string]any{"key": "k-fail", "value": marker + "-fail", "fail": true}, "error", ""},
		{fixture.ToolRead, map[string]any{"key": "k"}, "ok", ""},
		{fixture.ToolWrite, map[string]any{"key": "k", "value": marker + "-slow", "sleep_ms": 5000}, "unknown", ""},
		{fixture.ToolWrite, map[string]any{"key": "k", "value": marker + "-refused"}, "refused", "WRITES_LATCHED"},
	}
	cs := w.Connect(t, "/mcp", nil)
	for _, kind := range wlKinds {
		w.WaitReady(t, kind)
		for i, c := range calls {
			res := wardentest.CallResult(t, cs, kind+"__"+c.tool, c.args)
			if c.outcome == "error" {
				// A failing call is the upstream's answer: no latch.
				if !res.IsError || client.Refusal(res) != "" || wlOutcome(res) != "" {
					t.Fatalf("%s: failing write: want the upstream's error, got _meta=%v %q", kind, res.Meta, wardentest.ResultText(res))
				}
				for _, l := range wlLatches(t, w) {
					if l.Server == kind {
						t.Fatalf("%s: a failing call latched: %+v", kind, l)
					}
				}
			}
			if got := res.IsError; got != (c.outcome != "ok") {
				t.Fatalf("%s call %d: isError=%v %q", kind, i, got, wardentest.ResultText(res))
			}
		}
	}
	if ls := wlLatches(t, w); len(ls) != 2 {
		t.Fatalf("latches = %+v, want one per server", ls)
	}

	check := func(kind string, entries []wlActivity) {
		t.Helper()
		if len(entries) != len(calls) {
			t.Fatalf("%s: %d activity entries, want %d: %+v", kind, len(entries), len(calls), entries)
		}
		for i, c := range calls {
			e := entries[len(calls)-1-i] // newest first
			want := wlActivity{Surface: "mcp", Server: kind, Tool: c.tool, Class: "write", ArgsSHA256: wlArgsHash(t, c.args), Outcome: c.outcome, Code: c.code}
			if c.tool == fixture.ToolRead {
				want.Class = "read"
			}
			got := e
			got.At, got.LatencyMicros = time.Time{}, 0
			if got != want {
				t.Errorf("%s call %d: activity entry %+v, want %+v", kind, i, e, want)
			}
			if e.At.IsZero() || e.LatencyMicros <= 0 {
				t.Errorf("%s call %d: entry lacks time or latency: %+v", kind, i, e)
			}
		}
	}
	wardentest.WaitFor(t, 10*time.Second, "all calls in the activity log", func() bool {
		return len(wlActivityOf(t, w, "")) == 2*len(calls)
	})
	for _, kind := range wlKinds {
		check(kind, wlActivityOf(t, w, "?server="+kind))
	}
	// The CLI shows the same, filtered and limited.
	bin := testenv.BuildBinary(t, "./cmd/warden")
	for _, kind := range wlKinds {
		out, err := exec.Command(bin, "activity", "--server", kind, "--limit", "3", "--json", "--config", w.ConfigPath, "--state-dir", w.StateDir).CombinedOutput()
		if err != nil {
			t.Fatalf("warden activity: %v\n%s", err, out)
		}
		var entries []wlActivity
		if err := json.Unmarshal(out, &entries); err != nil {
			t.Fatalf("warden activity --json: %v\n%s", err, out)
		}
		if len(entries) != 3 {
			t.Fatalf("warden activity --limit 3 gave %d entries", len(entries))
		}
		all := wlActivityOf(t, w, "?server="+kind)
		for i := range entries {
			a, b := entries[i], all[i]
			if !a.At.Equal(b.At) {
				t.Fatalf("warden activity entry %d = %+v, API has %+v", i, a, b)
			}
			a.At, b.At = time.Time{}, time.Time{}
			if a != b {
				t.Fatalf("warden activity entry %d = %+v, API has %+v", i, entries[i], all[i])
			}
		}
		out, err = exec.Command(bin, "activity", "--server", kind, "--config", w.ConfigPath, "--state-dir", w.StateDir).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refused WRITES_LATCHED") || !strings.Contains(string(out), "unknown") {
			t.Fatalf("warden activity (table): %v\n%s", err, out)
		}
	}
	cs.Close()
	w.Stop()
	for _, kind := range wlKinds {
		if st := ups[kind].Stats(t); st.WriteDispatches != 3 {
			t.Fatalf("%s: write dispatches = %d, want 3 (ok, failing, timed out)", kind, st.WriteDispatches)
		}
	}
	wlNoMarkerInState(t, w.StateDir, marker, wlArgsHash(t, calls[3].args))
}

// Activity retention: with maxEntries 5, more calls leave at most 5 entries,
// the newest.
func TestActivityRetention(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wlStartConfig(t, map[string]any{
		"activity":   map[string]any{"maxEntries": 5},
		"mcpServers": map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}},
	})
	w.WaitReady(t, "s")
	cs := w.Connect(t, "/mcp/s", nil)
	for i := range 9 {
		wardentest.CallText(t, cs, fixture.ToolEcho, map[string]any{"i": i})
	}
	last := map[string]any{"last": true}
	wardentest.CallText(t, cs, fixture.ToolEcho, last)
	wardentest.WaitFor(t, 10*time.Second, "the last call in the activity log", func() bool {
		entries := wlActivityOf(t, w, "?limit=100")
		return len(entries) > 0 && entries[0].ArgsSHA256 == wlArgsHash(t, last)
	})
	entries := wlActivityOf(t, w, "?limit=100")
	if len(entries) > 5 {
		t.Fatalf("activity holds %d entries, maxEntries is 5", len(entries))
	}
	if len(entries) < 5 {
		t.Fatalf("activity holds %d entries, want the newest 5", len(entries))
	}
	for i, e := range entries[1:] {
		if want := wlArgsHash(t, map[string]any{"i": 8 - i}); e.ArgsSHA256 != want {
			t.Fatalf("entry %d is not call %d: %+v", i+1, 8-i, e)
		}
	}
	// Retention holds across a restart too.
	cs.Close()
	w.Stop()
	w = wardentest.StartWith(t, w.ConfigPath, w.StateDir)
	if n := len(wlActivityOf(t, w, "")); n > 5 {
		t.Fatalf("after restart activity holds %d entries", n)
	}
}

// A write still in flight when Warden stops is not forgotten: it is
// cancelled and latched before the store closes, and the latch is there
// after the restart.
func TestWriteInFlightAtStopLatches(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")
	cs := w.Connect(t, "/mcp/s", nil)
	// With a progress token the call takes the SDK server's path, whose
	// context does not end when the listener closes.
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: map[string]any{"key": "k", "value": "v", "sleep_ms": 20000},
		Meta: mcp.Meta{"progressToken": "p1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitWriteDispatches(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	w = wardentest.StartWith(t, w.ConfigPath, w.StateDir)
	var latches []wlLatch
	w.API(t, "GET", "/v1/writes", nil, &latches)
	if len(latches) != 1 || latches[0].Tool != fixture.ToolWrite || latches[0].Reason != "cancelled" {
		t.Fatalf("after a stop with a write in flight, latches = %+v; want the write, cancelled", latches)
	}
}

// A write the upstream refuses at the HTTP level (401, 429...) was not
// processed: it answers an error and latches nothing.
func TestWriteRefusedByHTTPDoesNotLatch(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	w := wardentest.Start(t, map[string]any{"s": map[string]any{"url": f.Serve(t), "trusted": true}})
	w.WaitReady(t, "s")
	cs := w.Connect(t, "/mcp/s", nil)
	wardentest.CallText(t, cs, "echo", map[string]any{}) // warm: the next request is the write
	f.HTTP().RefuseNext(1, http.StatusTooManyRequests)
	_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: map[string]any{"key": "k", "value": "v"}})
	if err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("a write refused with 429 should answer an error naming it, got %v", err)
	}
	if ls := wlLatches(t, w); len(ls) != 0 {
		t.Fatalf("a refused write latched the server: %+v", ls)
	}
	if n := f.WriteDispatches(); n != 0 {
		t.Fatalf("the refused write reached the tool %d times", n)
	}
}

// Twenty writes in flight at once, all cancelled: each is in doubt, so each
// is latched, listed by GET /v1/writes and `warden writes`, kept across a
// restart, and answered by the one clear that lifts them all.
func TestWriteLatchEveryConcurrentUnknownWrite(t *testing.T) {
	u := wlNewUpstream(t, "http", nil)
	d := wlNewDaemon(t, u)
	cs := d.connect()
	const n = 20
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	want := map[string]bool{} // args hashes
	var wg sync.WaitGroup
	for i := range n {
		args := map[string]any{"key": fmt.Sprintf("k%02d", i), "value": "v", "sleep_ms": 20000}
		want[wlArgsHash(t, args)] = true
		wg.Go(func() { cs.CallTool(ctx, &mcp.CallToolParams{Name: fixture.ToolWrite, Arguments: args}) })
	}
	u.waitStats(t, "all writes to reach the upstream", func(s fixture.Stats) bool { return s.WriteDispatches == n })
	cancel()
	wg.Wait()
	wardentest.WaitFor(t, 10*time.Second, "every write latched", func() bool { return len(d.latches()) >= n })

	check := func(when string, ls []wlLatch) {
		t.Helper()
		got := map[string]bool{}
		for _, l := range ls {
			if l.Server != "s" || l.Tool != fixture.ToolWrite || l.Reason != "cancelled" {
				t.Fatalf("%s: latch %+v", when, l)
			}
			got[l.ArgsSHA256] = true
		}
		if len(ls) != n || len(got) != n || !maps.Equal(got, want) {
			t.Fatalf("%s: %d latches (%d distinct calls), want each of the %d writes once: %+v", when, len(ls), len(got), n, ls)
		}
	}
	check("warden writes --json", d.latches())
	if out := d.cli("writes"); strings.Count(out, fixture.ToolWrite) != n {
		t.Fatalf("warden writes lists %d writes, want %d:\n%s", strings.Count(out, fixture.ToolWrite), n, out)
	}

	cs.Close()
	d.proc.Stop()
	d.serve()
	check("after a restart", d.latches())
	cs = d.connect()
	wardentest.WantRefusal(t, wardentest.CallResult(t, cs, fixture.ToolWrite, map[string]any{"key": "k", "value": "v"}), "WRITES_LATCHED", "warden writes clear s")

	var cleared struct {
		Cleared bool      `json:"cleared"`
		Latches []wlLatch `json:"latches"`
	}
	if err := json.Unmarshal([]byte(d.cli("writes", "clear", "s", "--yes", "--json")), &cleared); err != nil || !cleared.Cleared {
		t.Fatalf("warden writes clear s --json: %+v, %v", cleared, err)
	}
	check("the clear's answer", cleared.Latches)
	if ls := d.latches(); len(ls) != 0 {
		t.Fatalf("after the clear: %+v", ls)
	}
	wlMustWrite(t, cs, map[string]any{"key": "k", "value": "after-clear"})
}
