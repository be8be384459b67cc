package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// The differential tests: the same requests through a Warden with its
// tools/call fast paths (surface/fast.go downstream, upstream/fastcall.go
// upstream) and through one with them off (WARDEN_FASTPATH=off: the SDK's
// server and client carry everything) must get the same answers, ids aside.

// startPaths starts two Wardens on the servers each gets from servers: the
// first with the fast paths, the second without.
func startPaths(t *testing.T, servers func(path string) map[string]any) (fast, sdk *wardentest.Warden) {
	t.Helper()
	fast = wardentest.Start(t, servers("fast"))
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	wardentest.WriteConfig(t, cfg, servers("sdk"))
	sdk = wardentest.StartWith(t, cfg, filepath.Join(dir, "state"), func(o *daemon.Options) { o.NoFastPath = true })
	return fast, sdk
}

// The official suite's 2025-11-25 scenarios through both, each Warden on a
// stateful fixture of its own (its list-changing tools change a list only
// the first time), behind a proxy that sees which path each tools/call
// came by: every check of every scenario has the same status.
func TestDifferentialConformance(t *testing.T) { diffConformance(t) }

// The same with the suite's requirements of 2026-07-28: its stateless-era
// tools/call requests take surface/fast_stateless.go on one Warden and the
// SDK's stateless handler on the other.
func TestDifferentialConformance2026(t *testing.T) {
	diffConformance(t, "--requirements", "2026-07-28")
}

func diffConformance(t *testing.T, args ...string) {
	diffs, timingOnly := diffConformanceOnce(t, args...)
	if len(diffs) > 0 && timingOnly {
		// Both Wardens send a listen stream's list_changed by the same
		// code, which no fast path touches; the suite waits 1.5s for it.
		// A difference only there is the machine's load: run again once.
		t.Logf("only listen-stream timing differed, running again: %v", diffs)
		diffs, _ = diffConformanceOnce(t, args...)
	}
	for _, d := range diffs {
		t.Error(d)
	}
}

// diffConformanceOnce runs the suite through both Wardens and returns how
// their checks differ, one line per scenario, and whether they differ only
// in the checks that a listen stream's list_changed arrives in time; other
// failures it reports.
func diffConformanceOnce(t *testing.T, args ...string) (diffs []string, timingOnly bool) {
	ids := map[string]*callIDs{}
	fast, sdk := startPaths(t, func(path string) map[string]any {
		target, err := url.Parse(testenv.StartEverythingServer(t))
		if err != nil {
			t.Fatal(err)
		}
		ids[path] = &callIDs{}
		ts := httptest.NewServer(ids[path].observe(httputil.NewSingleHostReverseProxy(target)))
		t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
		return map[string]any{"everything": map[string]any{"url": ts.URL + target.Path, "trusted": true}}
	})
	fast.WaitReady(t, "everything")
	sdk.WaitReady(t, "everything")
	t.Cleanup(func() {
		if t.Failed() { // what each Warden did, for a difference seen only under load
			tail := func(s string) string { return s[max(0, len(s)-32<<10):] }
			t.Logf("the fast-path Warden's log, its end:\n%s\nthe SDK-path Warden's:\n%s", tail(fast.Logs.String()), tail(sdk.Logs.String()))
		}
	})
	results := map[string]map[string][]string{}
	answers := map[string]*statelessAnswers{}
	for name, w := range map[string]*wardentest.Warden{"fast": fast, "sdk": sdk} {
		answers[name] = &statelessAnswers{}
		target, err := url.Parse(w.URL("/"))
		if err != nil {
			t.Fatal(err)
		}
		front := httptest.NewServer(answers[name].observe(httputil.NewSingleHostReverseProxy(target)))
		t.Cleanup(func() { front.CloseClientConnections(); front.Close() })
		dir := t.TempDir()
		passed, failed, _ := testenv.RunConformance(t, front.URL+"/mcp/everything", append([]string{"-o", dir}, args...)...)
		t.Logf("%s paths: %d passed, %d failed", name, passed, failed)
		results[name] = readChecks(t, dir)
	}
	if len(results["fast"]) == 0 {
		t.Fatal("the suite wrote no results")
	}
	for path, want := range map[string]string{"fast": "string", "sdk": "number"} {
		if kinds := ids[path].kinds(); !slices.Equal(kinds, []string{want}) {
			t.Errorf("%s: ids of the tools/call requests upstream were of kinds %v: not the path under test", path, kinds)
		}
	}
	if len(args) > 0 { // the suite's stateless-era calls
		if got := answers["fast"].list(); !slices.Contains(got, "application/json") {
			t.Errorf("fast paths: stateless-era tools/call answered as %v: none by the fast path", got)
		}
		if got := answers["sdk"].list(); !slices.Equal(got, []string{"text/event-stream"}) {
			t.Errorf("SDK: stateless-era tools/call answered as %v: not by the SDK's handler alone", got)
		}
	}
	timingOnly = true
	for scenario, want := range results["sdk"] {
		if got := results["fast"][scenario]; !slices.Equal(got, want) {
			diffs = append(diffs, fmt.Sprintf("scenario %s: fast paths %v, SDK %v", scenario, got, want))
			timingOnly = timingOnly && slices.Equal(untimed(got), untimed(want))
		}
	}
	for scenario := range results["fast"] {
		if _, ok := results["sdk"][scenario]; !ok {
			diffs = append(diffs, fmt.Sprintf("scenario %s ran only with the fast paths", scenario))
			timingOnly = false
		}
	}
	return diffs, timingOnly
}

// untimed is a scenario's checks without those that a listen stream's
// list_changed arrives within the suite's wait.
func untimed(checks []string) []string {
	return slices.DeleteFunc(slices.Clone(checks), func(c string) bool {
		return strings.Contains(c, "-list-changed-on-subscription ")
	})
}

// readChecks reads the suite's -o directory: each scenario's checks as
// "id status", in order.
func readChecks(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	stamp := regexp.MustCompile(`-\d{4}-\d\d-\d\dT[\d-]+Z$`)
	out := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct{ ID, Status string }
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		scenario := stamp.ReplaceAllString(filepath.Base(filepath.Dir(f)), "")
		for _, c := range checks {
			out[scenario] = append(out[scenario], c.ID+" "+c.Status)
		}
	}
	return out
}

// A fixed set of raw tools/call requests through both, each Warden on a
// chatty fixture of its own: an upstream JSON-RPC error with its own code
// and data, a call without arguments, an unknown tool, a call during which
// the upstream pings the client, asks it an unknown method, sends it a
// notification with an id and an elicitation without params, and cancels
// an elicitation it sent, and a call the client cancels. What the client
// receives on each call's stream is the same, ids aside, and so is what
// the upstream hears of the cancellation.
func TestDifferentialCalls(t *testing.T) {
	type side struct {
		f     *fixture.Fixture
		ids   *callIDs
		url   string
		s     *fpSession
		asked chan struct{} // closed when the client has the chatty tool's question
		told  chan struct{} // and its cancellation
		once  [2]sync.Once
	}
	sides := map[string]*side{"fast": {}, "sdk": {}}
	for _, sd := range sides {
		sd.f, sd.ids = fixture.NewServer(fixture.Options{}), &callIDs{}
		sd.asked, sd.told = make(chan struct{}), make(chan struct{})
		ts := httptest.NewServer(sd.ids.observe(sd.f.Chatty(sd.asked, sd.told)))
		t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
		sd.url = ts.URL + "/mcp"
	}
	fast, sdk := startPaths(t, func(path string) map[string]any {
		return map[string]any{"s": map[string]any{"url": sides[path].url, "trusted": true}}
	})
	sides["fast"].s, sides["sdk"].s = diffOpen(t, fast), diffOpen(t, sdk)

	// Each answer also holds want, on both paths: the same wrong answer on
	// both would pass the comparison.
	calls := []struct{ name, params, want string }{
		{"upstream JSON-RPC error", `{"name":"rpc_error","arguments":{}}`, `"error":{"code":-32042,"data":{"why":"the fixture says so"}`},
		{"no arguments", `{"name":"echo"}`, `{"text":"{}","type":"text"}`}, // the upstream got "arguments":{}
		{"unknown tool", `{"name":"no_such_tool","arguments":{}}`, `"code":-32602`},
		{"upstream pings, asks an unknown method and odd requests, cancels its question", `{"name":"chatty","arguments":{}}`,
			`"method":"notifications/cancelled"`},
	}
	got := map[string]map[string]string{}
	for name, sd := range sides {
		got[name] = map[string]string{}
		for i, c := range calls {
			body := `{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"tools/call","params":` + c.params + `}`
			code, answer := sd.s.stream(body, func(msg string) {
				switch {
				case strings.Contains(msg, fixture.ChattyRefuse):
					sd.s.reply(msg, `"error":{"code":-31999,"message":"the test refuses","data":{"n":1}}`)
				case strings.Contains(msg, fixture.ChattyAcceptEmpty):
					sd.s.reply(msg, `"result":{"action":"accept","content":{}}`)
				case strings.Contains(msg, fixture.ChattyAcceptWrong):
					sd.s.reply(msg, `"result":{"action":"accept","content":{"n":"seven"}}`)
				case strings.Contains(msg, "Never mind."):
					sd.once[0].Do(func() { close(sd.asked) })
				case strings.Contains(msg, `"method":"notifications/cancelled"`):
					sd.once[1].Do(func() { close(sd.told) })
				}
			})
			got[name][c.name] = http.StatusText(code) + "\n" + stripIDs(t, answer)
			if !strings.Contains(got[name][c.name], c.want) {
				t.Errorf("%s, %s: the answer lacks %s:\n%s", name, c.name, c.want, got[name][c.name])
			}
			if c.name == calls[3].name {
				// The question went to the client on the path under test.
				fastID := strings.Contains(answer, `"id":"warden-fp-`)
				if fastID != (name == "fast") {
					t.Errorf("%s: the elicitation's id says the fast path is %v:\n%s", name, fastID, answer)
				}
			}
		}
		got[name]["cancelled by the client"] = cancelledCall(t, sd.s, sd.f)
		if kinds := sd.ids.kinds(); !slices.Equal(kinds, []string{map[string]string{"fast": "string", "sdk": "number"}[name]}) {
			t.Errorf("%s: ids of the tools/call requests upstream were of kinds %v: not the path under test", name, kinds)
		}
	}
	for _, c := range append(calls, struct{ name, params, want string }{name: "cancelled by the client"}) {
		if f, s := got["fast"][c.name], got["sdk"][c.name]; f != s {
			t.Errorf("%s: the paths differ\nfast paths:\n%s\nSDK:\n%s", c.name, f, s)
		}
	}
}

// diffOpen opens a raw 2025-11-25 session on /mcp/s of w, as a client that
// answers elicitation and sampling, once the chatty tool is listed.
func diffOpen(t *testing.T, w *wardentest.Warden) *fpSession {
	t.Helper()
	w.WaitReady(t, "s")
	return fpOpenWith(t, w, "/mcp/s", `{"elicitation":{},"sampling":{}}`, fixture.ToolChatty)
}

// reply posts the client's answer (answer: its "result" or "error" member)
// to the request msg.
func (s *fpSession) reply(msg, answer string) {
	s.t.Helper()
	var m struct{ ID json.RawMessage }
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		s.t.Fatalf("a request without an id: %s", msg)
	}
	if code, body, _ := s.send("POST", `{"jsonrpc":"2.0","id":`+string(m.ID)+`,`+answer+`}`, nil); code != http.StatusAccepted {
		s.t.Fatalf("answering %s: %d %s", msg, code, body)
	}
}

// stream posts a request and reads its answer as it comes, handing each
// event's data to seen; it returns the status and the whole body.
func (s *fpSession) stream(body string, seen func(data string)) (int, string) {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", s.id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	var all strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		all.WriteString(sc.Text() + "\n")
		if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			seen(d)
		}
	}
	return resp.StatusCode, strings.TrimSuffix(all.String(), "\n")
}

// cancelledCall sends a slow write, cancels it once it reached the
// upstream, and returns what the client got and whether the upstream saw
// the cancellation.
func cancelledCall(t *testing.T, s *fpSession, f *fixture.Fixture) string {
	t.Helper()
	answer := make(chan string, 1)
	go func() {
		code, body, _ := s.send("POST", `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"write_value","arguments":{"key":"k","value":"v","sleep_ms":20000}}}`, nil)
		answer <- http.StatusText(code) + "\n" + stripIDs(t, body)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.WaitWriteDispatches(ctx, 1); err != nil {
		t.Fatalf("the write did not reach the upstream: %v", err)
	}
	if code, body, _ := s.send("POST", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"the test cancels"}}`, nil); code != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: %d %s", code, body)
	}
	var got string
	select {
	case got = <-answer:
	case <-ctx.Done():
		t.Fatal("no answer to the cancelled call within 20s")
	}
	wardentest.WaitFor(t, 10*time.Second, "the upstream told of the cancellation", func() bool { return f.WritesCancelled() == 1 })
	return got
}

// stripIDs turns a call's answer (JSON, or an event stream) into its
// messages, one a line, without their ids and the ids they refer to.
func stripIDs(t *testing.T, body string) string {
	t.Helper()
	var msgs []string
	if strings.HasPrefix(body, "{") {
		msgs = []string{body}
	} else {
		for line := range strings.SplitSeq(body, "\n") {
			if d, ok := strings.CutPrefix(line, "data:"); ok && strings.TrimSpace(d) != "" {
				msgs = append(msgs, strings.TrimSpace(d))
			}
		}
	}
	var out []string
	for _, m := range msgs {
		var v map[string]any
		if err := json.Unmarshal([]byte(m), &v); err != nil {
			t.Fatalf("not a JSON-RPC message: %v: %s", err, m)
		}
		delete(v, "id")
		if p, ok := v["params"].(map[string]any); ok {
			delete(p, "requestId")
		}
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// callIDs notes the kinds of the ids of the tools/call requests an upstream
// receives: the fast path's are strings, the SDK client's numbers.
// seen is a set of the kinds of something an observer saw.
type seen struct {
	mu    sync.Mutex
	kinds map[string]bool
}

func (s *seen) add(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kinds == nil {
		s.kinds = map[string]bool{}
	}
	s.kinds[kind] = true
}

func (s *seen) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.kinds))
}

// callIDs sees the kinds of ids of the tools/call requests an upstream
// gets: strings from upstream/fastcall.go, numbers from the SDK's client.
type callIDs struct{ seen }

func (c *callIDs) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
				kind := "number"
				if bytes.HasPrefix(m.ID, []byte(`"`)) {
					kind = "string"
				}
				c.add(kind)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

func (c *callIDs) kinds() []string { return c.list() }

// statelessAnswers sees the media types of Warden's 200 OK answers to
// stateless-era tools/call requests: JSON from surface/fast_stateless.go,
// an event stream from the SDK's stateless handler (which answers errors
// with other statuses as JSON).
type statelessAnswers struct{ seen }

func (a *statelessAnswers) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &testenv.StatusWriter{ResponseWriter: w, Code: http.StatusOK}
		next.ServeHTTP(sw, r)
		if r.Header.Get("Mcp-Method") == "tools/call" && r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" && sw.Code == http.StatusOK {
			mt, _, _ := strings.Cut(w.Header().Get("Content-Type"), ";")
			a.add(mt)
		}
	})
}
