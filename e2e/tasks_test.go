package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// taskScenarios are the conformance suite's scenarios of the tasks
// extension.
var taskScenarios = []string{"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
	"tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-status-notifications",
	"tasks-required-task-error", "tasks-mrtr-composition"}

// tasksFixture starts an HTTP fixture-server with the tasks scenarios'
// tools (a 2026-07-28 one with stateless) and returns its URL.
func tasksFixture(t testing.TB, stateless bool) string {
	t.Helper()
	args := []string{"-tasks"}
	if stateless {
		args = append(args, "-stateless")
	}
	url, _, _ := httpFixture(t, args...)
	return url
}

// shortOfTasks are the checks of the tasks scenarios that may not pass
// through Warden, by upstream: for each, the statuses the suite may give
// it and why.
var shortOfTasks = map[string]map[string][]string{
	"t2025": {
		// The scenario cancels a confirm_delete (destructive) task whose
		// call waits upstream for its question. If the call is cancelled
		// before the upstream, its question failed, answers, the outcome
		// is unknown and latches the server (Warden's rule), and the
		// scenario's next confirm_delete is refused; if the upstream
		// answers first, it is known. Which comes first is the machine's.
		"tasks-mrtr-tasks-update-resumes": {"FAILURE", "SUCCESS"},
	},
}

// The conformance suite's ten scenarios of the tasks extension through
// /mcp/{server}, for an upstream of each era that has their tools and
// does not speak the extension (Warden runs the tasks; which tools run as
// tasks, and which only so, their definitions say): every check passes
// but those in shortOfTasks, which may fail as said there. tasks-status-notifications is skipped by the suite
// itself (its harness awaits a rewrite). The same through a Warden with
// its fast paths and one without (they hand task requests to the SDK
// server's path, and list tools' execution each their own way).
func TestTaskScenariosThroughWarden(t *testing.T) {
	fast, sdk := startPaths(t, func(string) map[string]any {
		return map[string]any{
			"t2026": map[string]any{"url": tasksFixture(t, true), "trusted": true},
			"t2025": map[string]any{"url": tasksFixture(t, false), "trusted": true},
		}
	})
	for path, w := range map[string]*wardentest.Warden{"fast": fast, "sdk": sdk} {
		w.WaitReady(t, "t2026")
		w.WaitReady(t, "t2025")
		for _, server := range []string{"t2026", "t2025"} {
			seen := map[string]bool{}
			passed := 0
			for _, sc := range taskScenarios {
				checks, out := testenv.RunServerScenario(t, w.URL("/mcp/"+server), "2026-07-28", sc)
				for _, c := range checks {
					want, short := shortOfTasks[server][c.ID]
					switch {
					case short:
						seen[c.ID] = true
					case sc == "tasks-status-notifications":
						want = []string{"SKIPPED"}
					default:
						want = []string{"SUCCESS"}
					}
					if c.Status == "SUCCESS" {
						passed++
					}
					if !slices.Contains(want, c.Status) {
						t.Errorf("%s paths, %s, %s: check %s is %s, want %s\n%s", path, server, sc, c.ID, c.Status, strings.Join(want, " or "), out)
					}
				}
			}
			for id := range shortOfTasks[server] {
				if !seen[id] {
					t.Errorf("%s paths, %s: check %s was not run", path, server, id)
				}
			}
			t.Logf("%s paths, %s: %d checks passed", path, server, passed)
		}
	}
}

// taskRPC sends a stateless-era request of a client that declares the
// tasks extension to url, with the headers the revision wants, and
// returns its result or its error. The client can answer elicitation.
func taskRPC(t *testing.T, url, method string, params map[string]any) (result map[string]any, rpcErr map[string]any) {
	t.Helper()
	return taskRPCAs(t, url, "", method, params)
}

// taskRPCAs is taskRPC with a bearer token ("": none).
func taskRPCAs(t *testing.T, url, token, method string, params map[string]any) (result map[string]any, rpcErr map[string]any) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, k := range []string{"name", "taskId"} {
		if v, ok := params[k].(string); ok {
			req.Header.Set("Mcp-Name", v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(b)) {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
				b = []byte(data) // the response is the last event
			}
		}
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatalf("%s: answer %q: %v", method, b, err)
	}
	return msg.Result, msg.Error
}

// A task whose Warden is killed (kill -9) while its write runs upstream
// is, after the restart, failed with an unknown outcome, and its server is
// latched like any write in doubt.
func TestTaskKill9(t *testing.T) {
	u := wlNewUpstream(t, "http", map[string]any{"tasks": []string{fixture.ToolWrite}})
	d := wlNewDaemon(t, u)
	d.connect().Close() // the upstream answers
	url := "http://" + d.listen + "/mcp/s"
	slow := map[string]any{"key": "k", "value": wlMarker(t), "sleep_ms": 10000}
	res, rpcErr := taskRPC(t, url, "tools/call", map[string]any{"name": fixture.ToolWrite, "arguments": slow})
	id, _ := res["taskId"].(string)
	if rpcErr != nil || res["resultType"] != "task" || id == "" {
		t.Fatalf("a slow write as a task: %v %v", res, rpcErr)
	}
	u.waitStats(t, "the write to reach the upstream", func(s fixture.Stats) bool { return s.WriteDispatches == 1 })

	d.kill9()
	d.serve()
	got, rpcErr := taskRPC(t, url, "tasks/get", map[string]any{"taskId": id})
	taskErr, _ := got["error"].(map[string]any)
	if rpcErr != nil || got["status"] != "failed" || taskErr == nil || !strings.Contains(fmt.Sprint(taskErr["message"]), "unknown outcome") {
		t.Fatalf("tasks/get after kill -9: %v %v; want failed with an unknown outcome", got, rpcErr)
	}
	listed := d.latches()
	if len(listed) != 1 || listed[0].Server != "s" || listed[0].Tool != fixture.ToolWrite || listed[0].ArgsSHA256 != wlArgsHash(t, slow) {
		t.Fatalf("warden writes --json after kill -9 mid-task = %+v", listed)
	}
	d.proc.Stop()
}

// Beyond the config's tasks.maxPerCaller running tasks, a call to run as a
// task is refused with an error naming the limit and what to do, and runs
// nothing; once a task ends, another may start. The activity log records
// the call as a task.
func TestTaskLimit(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	b, _ := json.Marshal(map[string]any{"tasks": map[string]any{"maxPerCaller": 1},
		"mcpServers": map[string]any{"tk": map[string]any{"url": tasksFixture(t, true), "trusted": true}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	w := wardentest.StartWith(t, cfg, filepath.Join(dir, "state"))
	w.WaitReady(t, "tk")
	url := w.URL("/mcp/tk")
	slow := func(label string) (map[string]any, map[string]any) {
		return taskRPC(t, url, "tools/call", map[string]any{"name": fixture.ToolSlowCompute, "arguments": map[string]any{"seconds": 60, "label": label}})
	}
	first, rpcErr := slow("first")
	id, _ := first["taskId"].(string)
	if rpcErr != nil || id == "" {
		t.Fatalf("the first task: %v %v", first, rpcErr)
	}
	if res, rpcErr := slow("second"); res != nil || !strings.Contains(fmt.Sprint(rpcErr["message"]), "already runs 1 tasks") || !strings.Contains(fmt.Sprint(rpcErr["message"]), "tasks/cancel") {
		t.Fatalf("a task beyond the limit: %v %v; want an error naming the limit", res, rpcErr)
	}
	if _, rpcErr := taskRPC(t, url, "tasks/cancel", map[string]any{"taskId": id}); rpcErr != nil {
		t.Fatal(rpcErr)
	}
	if res, rpcErr := slow("third"); rpcErr != nil || res["taskId"] == nil {
		t.Fatalf("a task after the first was cancelled: %v %v", res, rpcErr)
	}
	// The activity log is written off the call path: wait for the
	// cancelled call's entry.
	wardentest.WaitFor(t, 20*time.Second, "the activity of the cancelled task", func() bool {
		var entries []map[string]any
		w.API(t, "GET", "/v1/activity?server=tk", nil, &entries)
		for _, e := range entries {
			if e["task"] == true && e["tool"] == fixture.ToolSlowCompute {
				return true
			}
		}
		return false
	})
}

// A non-read task waiting for its client's answer when its Warden is
// killed (its 2026-07-28 upstream between rounds) is failed with an
// unknown outcome after the restart, and its server latched once: by its
// write's intent, which the task's recovery does not latch again.
func TestTaskKill9WhileAsking(t *testing.T) {
	url, _, _ := httpFixture(t, "-tasks", "-stateless")
	d := wlNewDaemon(t, &wlUpstream{kind: "http", cfg: map[string]any{"url": url, "trusted": true}})
	d.connect().Close() // the upstream answers
	mcpURL := "http://" + d.listen + "/mcp/s"
	args := map[string]any{"filename": "kill9.txt"}
	res, rpcErr := taskRPC(t, mcpURL, "tools/call", map[string]any{"name": fixture.ToolConfirmDelete, "arguments": args})
	id, _ := res["taskId"].(string)
	if rpcErr != nil || id == "" {
		t.Fatalf("confirm_delete as a task: %v %v", res, rpcErr)
	}
	wardentest.WaitFor(t, 20*time.Second, "the task to ask", func() bool {
		got, _ := taskRPC(t, mcpURL, "tasks/get", map[string]any{"taskId": id})
		return got["status"] == "input_required"
	})
	if listed := d.latches(); len(listed) != 0 {
		t.Fatalf("latched while asking: %+v", listed)
	}

	d.kill9()
	d.serve()
	got, rpcErr := taskRPC(t, mcpURL, "tasks/get", map[string]any{"taskId": id})
	if rpcErr != nil || got["status"] != "failed" {
		t.Fatalf("tasks/get after kill -9: %v %v; want failed", got, rpcErr)
	}
	listed := d.latches()
	if len(listed) != 1 || listed[0].Tool != fixture.ToolConfirmDelete || listed[0].ArgsSHA256 != wlArgsHash(t, args) {
		t.Fatalf("warden writes --json after kill -9 of an asking task = %+v", listed)
	}
	d.proc.Stop()
}

// runTaskScenarios runs the suite's tasks scenarios against url and
// reports every check that is not as expected (every check SUCCESS; the
// status-notifications scenario SKIPPED by the suite itself), and how
// many passed.
func runTaskScenarios(t *testing.T, url, what string, short map[string][]string) int {
	t.Helper()
	passed := 0
	for _, sc := range taskScenarios {
		checks, out := testenv.RunServerScenario(t, url, "2026-07-28", sc)
		for _, c := range checks {
			want, isShort := short[c.ID]
			switch {
			case isShort:
			case sc == "tasks-status-notifications":
				want = []string{"SKIPPED"}
			default:
				want = []string{"SUCCESS"}
			}
			if c.Status == "SUCCESS" && !isShort {
				passed++
			}
			if !slices.Contains(want, c.Status) {
				t.Errorf("%s, %s: check %s is %s, want %s\n%s", what, sc, c.ID, c.Status, strings.Join(want, " or "), out)
			}
		}
	}
	t.Logf("%s: %d checks passed", what, passed)
	return passed
}

// shortOfPassThrough are the checks that may fail through Warden, to an
// upstream that runs the tasks itself: a scenario cancels a confirm_delete
// (destructive) task the upstream runs while it waits for its question,
// whose outcome Warden then cannot know: the server latches (Warden's
// rule; TestHandedWriteTaskLatches), and this check's confirm_delete is
// refused. A cancel that reaches Warden before it passed the call on ends
// the task in Warden, unsent: then it passes.
var shortOfPassThrough = map[string][]string{"tasks-mrtr-tasks-update-resumes": {"FAILURE", "SUCCESS"}}

// An upstream that speaks the tasks extension itself (the fixture's
// -tasks-native) gets its task requests passed through: the suite's ten
// tasks scenarios pass against it directly and through /mcp/{server}
// alike, with the same number of checks (but for shortOfPassThrough), and the tasks through Warden ran
// on the upstream, not in Warden: Warden made no more plain calls of the
// upstream's task tools than the suite makes directly (a task Warden ran
// itself would call its tool plainly), and the upstream started tasks. It
// may start fewer than directly: a task its client cancels before Warden
// passed the call on (the suite creates and cancels at once in a few
// checks) ends in Warden and never starts upstream. The same through a
// Warden with its fast paths and one without (a task passed through
// takes the direct path on both).
func TestTaskPassThrough(t *testing.T) {
	url, _, stats := httpFixture(t, "-tasks-native", "-stateless")
	direct := runTaskScenarios(t, url, "the native upstream directly", shortOfPassThrough)
	st, _ := fixture.ReadStatsFile(stats)
	perRun, plainPerRun := st.NativeTasks, st.NativePlainCalls
	if perRun == 0 {
		t.Fatal("the native upstream started no task of its own")
	}
	fast, sdk := startPaths(t, func(string) map[string]any {
		return map[string]any{"native": map[string]any{"url": url, "trusted": true}}
	})
	for path, w := range map[string]*wardentest.Warden{"fast": fast, "sdk": sdk} {
		w.WaitReady(t, "native")
		before, _ := fixture.ReadStatsFile(stats)
		if through := runTaskScenarios(t, w.URL("/mcp/native"), path+" paths, through Warden", shortOfPassThrough); through != direct {
			t.Errorf("%s paths: %d checks passed through Warden, %d directly", path, through, direct)
		}
		// The client has Warden's handle once the task is in the store, and
		// the call goes upstream after: the scenarios' last may start there
		// once they ended.
		var after fixture.Stats
		wardentest.Poll(10*time.Second, func() bool {
			after, _ = fixture.ReadStatsFile(stats)
			return after.NativeTasks-before.NativeTasks >= perRun
		})
		started, plain := after.NativeTasks-before.NativeTasks, after.NativePlainCalls-before.NativePlainCalls
		t.Logf("%s paths: the upstream started %d tasks and ran %d plain calls of its task tools (directly %d and %d)", path, started, plain, perRun, plainPerRun)
		if plain != plainPerRun || started == 0 || started > perRun {
			t.Errorf("%s paths: through Warden the upstream started %d tasks and ran %d plain calls of its task tools; for the suite directly %d and %d: the tasks were not passed through",
				path, started, plain, perRun, plainPerRun)
		}
	}
}

// A task passed through is its caller's alone: another caller's
// tasks/get, tasks/update and tasks/cancel of it are answered as for an
// unknown id (-32602, the same words), never "forbidden", so ids do not
// leak; its caller gets it under Warden's id, not the upstream's, also
// after Warden is killed and restarted (the id's mapping is in the
// store). A call passed through is admitted as a direct call: one outside
// its caller's profile is refused and starts no task upstream.
func TestTaskPassThroughCallers(t *testing.T) {
	url, _, stats := httpFixture(t, "-tasks-native", "-stateless")
	dir := t.TempDir()
	d := &wlDaemon{t: t, bin: testenv.BuildBinary(t, "./cmd/warden"), cfg: filepath.Join(dir, "config.json"),
		state: filepath.Join(dir, "state"), listen: "127.0.0.1:" + itoa(testenv.FreePort(t))}
	b, _ := json.Marshal(map[string]any{"listen": d.listen,
		"mcpServers": map[string]any{"nt": map[string]any{"url": url, "trusted": true}},
		"clients": map[string]any{
			"alice": map[string]any{"tokenSha256": testenv.TokenSHA256("alice-token"), "profile": "readonly"},
			"bob":   map[string]any{"tokenSha256": testenv.TokenSHA256("bob-token"), "profile": "greeter"},
		},
		"profiles": map[string]any{
			"readonly": map[string]any{"classes": []string{"read"}},
			"greeter":  map[string]any{"servers": map[string]any{"nt": map[string]any{"tools": []string{fixture.ToolGreet}}}},
		}})
	if err := os.WriteFile(d.cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	d.serve()
	defer d.proc.Stop()
	mcpURL := "http://" + d.listen + "/mcp/nt"
	slow := map[string]any{"name": fixture.ToolSlowCompute, "arguments": map[string]any{"seconds": 60, "label": "alice"}}
	var res, rpcErr map[string]any
	defer func() {
		if t.Failed() {
			t.Logf("last answer: %v %v", res, rpcErr)
		}
	}()
	wardentest.WaitFor(t, 20*time.Second, "the upstream's tools", func() bool {
		listed, _ := taskRPCAs(t, mcpURL, "alice-token", "tools/list", map[string]any{})
		return strings.Contains(fmt.Sprint(listed["tools"]), fixture.ToolSlowCompute)
	})
	res, rpcErr = taskRPCAs(t, mcpURL, "alice-token", "tools/call", slow)
	id, _ := res["taskId"].(string)
	wardentest.WaitFor(t, 20*time.Second, "the upstream to start alice's task", func() bool {
		st, _ := fixture.ReadStatsFile(stats)
		return st.NativeTasks == 1
	})

	unknown := func(what string, got, rpcErr map[string]any, id string) {
		t.Helper()
		msg := fmt.Sprint(rpcErr["message"])
		if got != nil || rpcErr["code"] != float64(-32602) || !strings.Contains(msg, fmt.Sprintf("no task %q", id)) || strings.Contains(strings.ToLower(msg), "forbidden") {
			t.Errorf("%s: %v %v; want -32602, no task %q", what, got, rpcErr, id)
		}
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := map[string]any{"taskId": id}
		if m == "tasks/update" {
			params["inputResponses"] = map[string]any{"input-1": map[string]any{"action": "accept"}}
		}
		got, rpcErr := taskRPCAs(t, mcpURL, "bob-token", m, params)
		unknown("bob's "+m+" of alice's task", got, rpcErr, id)
	}
	got, rpcErr := taskRPCAs(t, mcpURL, "bob-token", "tasks/get", map[string]any{"taskId": "NOSUCHTASK"})
	unknown("bob's tasks/get of no task", got, rpcErr, "NOSUCHTASK")

	res, rpcErr = taskRPCAs(t, mcpURL, "bob-token", "tools/call", slow)
	if rpcErr != nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["_meta"]), "NOT_PERMITTED") {
		t.Errorf("bob's slow_compute: %v %v; want the profile's refusal", res, rpcErr)
	}
	if st, _ := fixture.ReadStatsFile(stats); st.NativeTasks != 1 {
		t.Errorf("a refused call started a task upstream (%d)", st.NativeTasks)
	}

	d.kill9()
	d.serve()
	got, rpcErr = taskRPCAs(t, mcpURL, "alice-token", "tasks/get", map[string]any{"taskId": id})
	if rpcErr != nil || got["taskId"] != id || got["status"] != "working" {
		t.Fatalf("alice's tasks/get after a restart: %v %v; want her task working, under Warden's id", got, rpcErr)
	}
	if _, rpcErr := taskRPCAs(t, mcpURL, "alice-token", "tasks/cancel", map[string]any{"taskId": id}); rpcErr != nil {
		t.Fatal(rpcErr)
	}
	got, rpcErr = taskRPCAs(t, mcpURL, "alice-token", "tasks/get", map[string]any{"taskId": id})
	if rpcErr != nil || got["status"] != "cancelled" {
		t.Fatalf("alice's task after her cancel: %v %v; want cancelled upstream", got, rpcErr)
	}
	got, rpcErr = taskRPCAs(t, mcpURL, "bob-token", "tasks/get", map[string]any{"taskId": id})
	unknown("bob's tasks/get after the restart", got, rpcErr, id)
}

// The search view serves tasks through call_tool, listed as optionally a
// task: a client that declares the extension and calls a tool that runs
// as a task gets a handle, for an upstream Warden runs the task for and
// one it passes the task through to alike; the task completes with the
// tool's result.
func TestTaskSearchView(t *testing.T) {
	nativeURL, _, stats := httpFixture(t, "-tasks-native", "-stateless")
	w := wardentest.Start(t, map[string]any{
		"nt":  map[string]any{"url": nativeURL, "trusted": true},
		"t26": map[string]any{"url": tasksFixture(t, true), "trusted": true},
	})
	w.WaitReady(t, "nt")
	w.WaitReady(t, "t26")
	url := w.URL("/mcp?view=search")
	listed, rpcErr := taskRPC(t, url, "tools/list", map[string]any{})
	if !strings.Contains(fmt.Sprint(listed["tools"]), "execution:map[taskSupport:optional]") {
		t.Errorf("the search view's tools: %v %v; want call_tool listed as optionally a task", listed, rpcErr)
	}
	for _, server := range []string{"nt", "t26"} {
		label := "via search on " + server
		res, rpcErr := taskRPC(t, url, "tools/call", map[string]any{"name": "call_tool",
			"arguments": map[string]any{"name": server + "__" + fixture.ToolSlowCompute, "arguments": map[string]any{"seconds": 0.2, "label": label}}})
		id, _ := res["taskId"].(string)
		if rpcErr != nil || res["resultType"] != "task" || id == "" {
			t.Fatalf("%s: call_tool of slow_compute: %v %v; want a task handle", server, res, rpcErr)
		}
		var got map[string]any
		wardentest.WaitFor(t, 20*time.Second, server+"'s task to complete", func() bool {
			got, rpcErr = taskRPC(t, url, "tasks/get", map[string]any{"taskId": id})
			return rpcErr != nil || got["status"] != "working"
		})
		if rpcErr != nil || got["status"] != "completed" || !strings.Contains(fmt.Sprint(got["result"]), label+": computed in 0.2s") {
			t.Errorf("%s: the task: %v %v; want it completed with slow_compute's result", server, got, rpcErr)
		}
	}
	if st, _ := fixture.ReadStatsFile(stats); st.NativeTasks != 1 {
		t.Errorf("the native upstream started %d tasks, want the one passed through", st.NativeTasks)
	}
}

// A non-read call its upstream runs as a task of its own leaves Warden
// with an unknown outcome when Warden cannot learn how the task ended: its
// client cancels it while it runs there (the server latches, "cancelled",
// and the next write is refused), or the upstream no longer knows it (it
// restarted: "upstream_lost"). A read task cancelled, and a write task
// cancelled after it completed, latch nothing, also when the upstream
// refuses the cancel of a finished task (-32602) as for an unknown one.
func TestHandedWriteTaskLatches(t *testing.T) {
	listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	bin := testenv.BuildBinary(t, fixturePkg)
	stats := filepath.Join(t.TempDir(), "stats.json")
	upstream := func() *testenv.Process {
		p := testenv.StartProcess(t, exec.Command(bin, "-http", listen, "-stats", stats, "-tasks-native", "-stateless", "-tasks-refuse-finished-cancel"))
		wardentest.WaitFor(t, 20*time.Second, "the upstream to listen", func() bool {
			st, ok := fixture.ReadStatsFile(stats)
			return ok && st.PID == p.PID()
		})
		return p
	}
	proc := upstream()
	url := "http://" + listen + "/mcp"
	w := wardentest.Start(t, map[string]any{
		"rd": map[string]any{"url": url, "trusted": true},
		"nt": map[string]any{"url": url, "trusted": true, "tools": map[string]any{fixture.ToolSlowCompute: map[string]any{"class": "write"}}},
	})
	w.WaitReady(t, "rd")
	w.WaitReady(t, "nt")
	latches := func() (reasons []string) {
		var ls []struct{ Server, Reason string }
		w.API(t, "GET", "/v1/writes", nil, &ls)
		for _, l := range ls {
			reasons = append(reasons, l.Server+" "+l.Reason)
		}
		return reasons
	}
	started := func(server string, seconds float64) string {
		t.Helper()
		before, _ := fixture.ReadStatsFile(stats)
		res, rpcErr := taskRPC(t, w.URL("/mcp/"+server), "tools/call", map[string]any{"name": fixture.ToolSlowCompute, "arguments": map[string]any{"seconds": seconds, "label": "x"}})
		id, _ := res["taskId"].(string)
		if id == "" {
			t.Fatalf("%s: no task: %v %v", server, res, rpcErr)
		}
		wardentest.WaitFor(t, 20*time.Second, "the upstream to run the task", func() bool {
			st, _ := fixture.ReadStatsFile(stats)
			return st.NativeTasks > before.NativeTasks
		})
		wardentest.WaitFor(t, 20*time.Second, "the task to be the upstream's", func() bool {
			res, _ := taskRPC(t, w.URL("/mcp/"+server), "tasks/get", map[string]any{"taskId": id})
			return res["status"] == "working" || res["status"] == "completed"
		})
		return id
	}
	cancel := func(server, id string) {
		t.Helper()
		if res, rpcErr := taskRPC(t, w.URL("/mcp/"+server), "tasks/cancel", map[string]any{"taskId": id}); rpcErr != nil && !strings.Contains(fmt.Sprint(rpcErr), "has finished") {
			t.Fatalf("cancel: %v %v", res, rpcErr)
		}
	}

	done := started("nt", 0.01)
	wardentest.WaitFor(t, 20*time.Second, "the short write task to complete", func() bool {
		res, _ := taskRPC(t, w.URL("/mcp/nt"), "tasks/get", map[string]any{"taskId": done})
		return res["status"] == "completed"
	})
	cancel("nt", done)
	cancel("rd", started("rd", 60))
	if got := latches(); len(got) != 0 {
		t.Fatalf("a completed write task's cancel, or a read task's, latched: %v", got)
	}

	id := started("nt", 60)
	cancel("nt", id)
	if got := latches(); !slices.Equal(got, []string{"nt cancelled"}) {
		t.Fatalf("after cancelling a write task its upstream ran: latches %v, want nt cancelled", got)
	}
	if res, _ := taskRPC(t, w.URL("/mcp/nt"), "tasks/get", map[string]any{"taskId": id}); res["status"] != "cancelled" {
		t.Errorf("the cancelled task: %v", res)
	}
	res, _ := taskRPC(t, w.URL("/mcp/nt"), "tools/call", map[string]any{"name": fixture.ToolSlowCompute, "arguments": map[string]any{"seconds": 0.01, "label": "y"}})
	if !strings.Contains(fmt.Sprint(res), "WRITES_LATCHED") {
		t.Errorf("a write after the latch: %v, want refused", res)
	}
	if code := w.API(t, "DELETE", "/v1/writes/nt", nil, nil); code != http.StatusOK {
		t.Fatalf("clearing the latch: %d", code)
	}

	id = started("nt", 60)
	proc.Stop()
	upstream()
	res, rpcErr := taskRPC(t, w.URL("/mcp/nt"), "tasks/get", map[string]any{"taskId": id})
	if rpcErr == nil {
		t.Fatalf("a task its restarted upstream does not know: %v", res)
	}
	if got := latches(); !slices.Equal(got, []string{"nt upstream_lost"}) {
		t.Fatalf("after the upstream lost a write task: latches %v, want nt upstream_lost", got)
	}
	if res, _ := taskRPC(t, w.URL("/mcp/nt"), "tasks/get", map[string]any{"taskId": id}); res["status"] != "failed" {
		t.Errorf("the lost task: %v", res)
	}
}
