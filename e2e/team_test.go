package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A team: three `warden serve` processes on one PostgreSQL, behind Debian's
// haproxy in round robin (no stickiness), over real upstreams.
type team struct {
	pg     *pgtest.Server
	bin    string
	config string
	key    string
	inst   []*instance
	lb     *testenv.HAProxy
}

// instance is one `warden serve` of a team.
type instance struct {
	*testenv.Process
	name     string
	addr     string
	stateDir string
	token    string
}

const teamKey = "a team's store key, for the tests only"

// startTeam starts PostgreSQL, n instances sharing it with mcpServers, and
// haproxy in front of them.
func startTeam(t testing.TB, n int, servers map[string]any) *team {
	t.Helper()
	tm := &team{pg: pgtest.Start(t, pgtest.Options{}), bin: testenv.BuildBinary(t, "./cmd/warden"), key: teamKey}
	tm.config = filepath.Join(t.TempDir(), "config.json")
	cfg, err := json.Marshal(map[string]any{"store": tm.pg.URL(), "storeKey": "${env:WARDEN_STORE_KEY}", "mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tm.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for i := range n {
		in := tm.start(t, fmt.Sprintf("i%d", i+1), "")
		tm.inst = append(tm.inst, in)
		addrs = append(addrs, in.addr)
	}
	tm.lb = testenv.StartHAProxy(t, "/healthz", addrs...)
	return tm
}

// start runs one instance (addr "" picks a free port).
func (tm *team) start(t testing.TB, name, addr string) *instance {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	}
	in := &instance{name: name, addr: addr, stateDir: filepath.Join(t.TempDir(), name)}
	cmd := exec.Command(tm.bin, "serve", "--config", tm.config, "--state-dir", in.stateDir, "--listen", addr)
	cmd.Env = append(os.Environ(), "WARDEN_STORE_KEY="+tm.key)
	in.Process = testenv.StartProcess(t, cmd)
	testenv.WaitHTTP(t, "http://"+addr+"/healthz", 30*time.Second)
	token, err := os.ReadFile(filepath.Join(in.stateDir, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	in.token = strings.TrimSpace(string(token))
	return in
}

func (in *instance) url(path string) string { return "http://" + in.addr + path }

// api calls the instance's operator API; out may be nil.
func (in *instance) api(t testing.TB, method, path string, body, out any) int {
	t.Helper()
	var rd bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd.Reset(b)
	}
	req, _ := http.NewRequest(method, in.url(path), &rd)
	req.Header.Set("Authorization", "Bearer "+in.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, in.name, err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s on %s: %v", method, path, in.name, err)
		}
	}
	return resp.StatusCode
}

// toolStatus is a tool's approval status on the instance.
func (in *instance) toolStatus(t testing.TB, server, tool string) string {
	var tools []struct{ Name, Status string }
	if in.api(t, "GET", "/v1/servers/"+server+"/tools?definitions=false", nil, &tools) != http.StatusOK {
		return ""
	}
	for _, tl := range tools {
		if tl.Name == tool {
			return tl.Status
		}
	}
	return ""
}

// refusal returns a call's refusal code, "" when it was answered.
func refusal(res *mcp.CallToolResult) string {
	if res == nil || !res.IsError {
		return ""
	}
	if m, ok := res.Meta["warden/refusal"].(map[string]any); ok {
		code, _ := m["code"].(string)
		return code
	}
	return "error: " + wardentest.ResultText(res)
}

func tryCall(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

var eras = map[string]*mcp.ClientSessionOptions{"2025-11-25": {ProtocolVersion: "2025-11-25"}, "2026-07-28": {ProtocolVersion: "2026-07-28"}}

// Three instances behind a balancer are one Warden: an approval on one
// holds on all (their clients are told), a latch on one refuses writes on
// all, an instance killed during a write leaves the server latched, a
// 2025 session outlives its instance, and PostgreSQL stopped for ten
// seconds costs writes, not reads, and nothing after.
func TestTeam(t *testing.T) {
	fx := fixture.NewServer(fixture.Options{})
	rich := fixture.NewRich(t)
	memory := memoryServer(t) // its file shared by every instance's process
	memory["cwd"] = filepath.Dir(memory["env"].(map[string]string)["MEMORY_FILE_PATH"])
	tm := startTeam(t, 3, map[string]any{
		"fx":     map[string]any{"url": fx.Serve(t)}, // untrusted: quarantined until approved
		"rich":   map[string]any{"url": rich.URL, "trusted": true},
		"memory": memory,
	})
	i1, i2, i3 := tm.inst[0], tm.inst[1], tm.inst[2]
	whole := t // what is started for the later steps lives as long as the test
	lb := "http://" + tm.lb.Addr

	// Clients of every instance, on fx's endpoint and the aggregated one,
	// hear of the approval made on i1.
	type watcher struct {
		where, tool string
		cs          *mcp.ClientSession
		changed     chan struct{}
	}
	var watchers []watcher
	for _, in := range tm.inst {
		for path, tool := range map[string]string{"/mcp/fx": fixture.ToolRead, "/mcp": "fx__" + fixture.ToolRead} {
			w := watcher{where: in.name + " " + path, tool: tool, changed: make(chan struct{}, 16)}
			w.cs = wardentest.ConnectURL(t, in.url(path), &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				w.changed <- struct{}{}
			}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			watchers = append(watchers, w)
		}
	}

	t.Run("approve on one, call through the balancer", func(t *testing.T) {
		wardentest.WaitFor(t, 30*time.Second, "fx listed, pending, on every instance", func() bool {
			return i1.toolStatus(t, "fx", fixture.ToolRead) != "" && i2.toolStatus(t, "fx", fixture.ToolRead) != "" && i3.toolStatus(t, "fx", fixture.ToolRead) != ""
		})
		for _, w := range watchers { // what was said before the approval does not count
			if names := wardentest.ToolNames(t, w.cs); slices.Contains(names, w.tool) {
				t.Fatalf("%s lists %s before the approval", w.where, w.tool)
			}
			for len(w.changed) > 0 {
				<-w.changed
			}
		}
		if code := i1.api(t, "POST", "/v1/servers/fx/approve", map[string]any{}, nil); code != http.StatusOK {
			t.Fatalf("approving fx on i1: %d", code)
		}
		for _, in := range tm.inst {
			wardentest.WaitFor(t, 10*time.Second, "fx approved on "+in.name, func() bool { return in.toolStatus(t, "fx", fixture.ToolRead) == "approved" })
		}
		for _, w := range watchers {
			select {
			case <-w.changed:
			case <-time.After(10 * time.Second):
				t.Fatalf("a client of %s was not told the tools changed after the approval on i1", w.where)
			}
			if names := wardentest.ToolNames(t, w.cs); !slices.Contains(names, w.tool) {
				t.Fatalf("a client of %s lists %v after the approval", w.where, names)
			}
		}
		for era, so := range eras {
			cs := wardentest.ConnectURL(t, lb+"/mcp", nil, so)
			for i := range 6 { // every instance, twice
				res, err := tryCall(t, cs, "fx__"+fixture.ToolRead, map[string]any{})
				if err != nil || refusal(res) != "" {
					t.Fatalf("%s: call %d through the balancer: %v %v", era, i, refusal(res), err)
				}
			}
		}
	})

	t.Run("a stdio server on each instance", func(t *testing.T) {
		// Each instance runs its own server-memory; they share its file, so
		// what one writes every other reads.
		cs := wardentest.ConnectURL(t, lb+"/mcp", nil, eras["2026-07-28"])
		wardentest.WaitFor(t, 30*time.Second, "memory listed through the balancer", func() bool {
			return slices.Contains(wardentest.ToolNames(t, cs), "memory__read_graph")
		})
		wardentest.CallText(t, cs, "memory__create_entities", map[string]any{"entities": []any{
			map[string]any{"name": "team-entity", "entityType": "test", "observations": []string{"through the balancer"}},
		}})
		for _, in := range tm.inst {
			c := wardentest.ConnectURL(t, in.url("/mcp/memory"), nil, nil)
			wardentest.WaitFor(t, 30*time.Second, "memory ready on "+in.name, func() bool {
				return slices.Contains(wardentest.ToolNames(t, c), "read_graph")
			})
			if graph := wardentest.CallText(t, c, "read_graph", map[string]any{}); !strings.Contains(graph, "team-entity") {
				t.Fatalf("%s's memory server reads %s", in.name, graph)
			}
		}
	})

	t.Run("a client's answers reach the instance that asked", func(t *testing.T) {
		cs := wardentest.ConnectURL(t, lb+"/mcp/rich", &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"who": "alice"}}, nil
			},
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Model: "m1", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
			},
		}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		for i := range 3 {
			res, err := tryCall(t, cs, fixture.RichTool, map[string]any{})
			if err != nil || res.IsError || !strings.HasPrefix(wardentest.ResultText(res), "alice|") {
				t.Fatalf("ask %d through the balancer: %v %v", i, res, err)
			}
		}
	})

	t.Run("a latch on one refuses writes on all", func(t *testing.T) {
		cs := wardentest.ConnectURL(t, i1.url("/mcp"), nil, nil)
		ctx, cancel := context.WithCancel(context.Background())
		before := fx.WriteDispatches()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fx__" + fixture.ToolWrite, Arguments: map[string]any{"value": "x", "sleep_ms": 3000}})
		}()
		wardentest.WaitFor(t, 10*time.Second, "the write sent upstream", func() bool { return fx.WriteDispatches() > before })
		cancel() // its outcome is unknown now
		<-done
		for _, in := range tm.inst {
			c := wardentest.ConnectURL(t, in.url("/mcp"), nil, nil)
			wardentest.WaitFor(t, 10*time.Second, "writes latched on "+in.name, func() bool {
				res, err := tryCall(t, c, "fx__"+fixture.ToolWrite, map[string]any{"value": "y"})
				return err == nil && refusal(res) == "WRITES_LATCHED"
			})
		}
		if code := i2.api(t, "DELETE", "/v1/writes/fx", nil, nil); code != http.StatusOK {
			t.Fatalf("clearing on i2: %d", code)
		}
		c := wardentest.ConnectURL(t, i3.url("/mcp"), nil, nil)
		wardentest.WaitFor(t, 10*time.Second, "writes admitted on i3 after the clear on i2", func() bool {
			res, err := tryCall(t, c, "fx__"+fixture.ToolWrite, map[string]any{"value": "z"})
			return err == nil && refusal(res) == ""
		})
	})

	t.Run("a 2025 session outlives its instance; kill -9 during a write latches", func(t *testing.T) {
		sessions := map[string]*mcp.ClientSession{}
		for era, so := range eras {
			sessions[era] = wardentest.ConnectURL(t, lb+"/mcp", nil, so)
		}
		begun := &fpSession{t: t, url: i2.url("/mcp")} // a session i2 began
		begun.initialize(`{}`)
		c2 := wardentest.ConnectURL(t, i2.url("/mcp"), nil, nil)
		before := fx.WriteDispatches()
		go func() {
			_, _ = tryCall(t, c2, "fx__"+fixture.ToolWrite, map[string]any{"value": "lost", "sleep_ms": 5000})
		}()
		wardentest.WaitFor(t, 10*time.Second, "the write sent upstream", func() bool { return fx.WriteDispatches() > before })
		if err := i2.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-i2.Done()
		// The sweep of dead instances latches i2's write before anyone tries one.
		wardentest.WaitFor(t, 30*time.Second, "i2's write latched as warden_interrupted on i1", func() bool {
			var latches []struct{ Server, Reason string }
			i1.api(t, "GET", "/v1/writes", nil, &latches)
			return slices.ContainsFunc(latches, func(l struct{ Server, Reason string }) bool { return l.Reason == "warden_interrupted" })
		})
		for era, cs := range sessions {
			for i := range 6 {
				res, err := tryCall(t, cs, "fx__"+fixture.ToolRead, map[string]any{})
				if err != nil || refusal(res) != "" {
					t.Fatalf("%s: read %d after i2 died: %v %v", era, i, refusal(res), err)
				}
			}
			res, err := tryCall(t, cs, "fx__"+fixture.ToolWrite, map[string]any{"value": "after"})
			if err != nil || refusal(res) != "WRITES_LATCHED" {
				t.Fatalf("%s: a write after i2 died during one: %v %v; want WRITES_LATCHED", era, refusal(res), err)
			}
		}
		begun.url = lb + "/mcp"
		for i := range 4 {
			code, body, _ := begun.send("POST", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__`+fixture.ToolRead+`","arguments":{}}}`, nil)
			if code != http.StatusOK || !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
				t.Fatalf("call %d of the session i2 began, after i2 died: %d %s", i, code, body)
			}
		}
		i1.api(t, "DELETE", "/v1/writes/fx", nil, nil)
		tm.inst[1] = tm.start(whole, "i2", i2.addr) // back, for what follows
	})

	t.Run("PostgreSQL down for ten seconds", func(t *testing.T) {
		// A 2025 session every instance knows already (one an instance has
		// not seen cannot move there while the store is down: its client
		// gets 404 and begins again), and a 2026-07-28 client.
		sessions := map[string]*mcp.ClientSession{}
		for era, so := range eras {
			sessions[era] = wardentest.ConnectURL(t, lb+"/mcp", nil, so)
		}
		for _, in := range tm.inst { // each serves the 2025 session once
			s := &fpSession{t: t, url: in.url("/mcp"), id: sessions["2025-11-25"].ID()}
			if code, body, _ := s.send("POST", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil); code != http.StatusOK {
				t.Fatalf("the session on %s: %d %s", in.name, code, body)
			}
		}
		tm.pg.Stop(t)
		for era, cs := range sessions {
			for i := range 6 {
				res, err := tryCall(t, cs, "fx__"+fixture.ToolRead, map[string]any{})
				if err != nil || refusal(res) != "" {
					t.Fatalf("%s: read %d with the store down: %v %v", era, i, refusal(res), err)
				}
			}
			res, err := tryCall(t, cs, "fx__"+fixture.ToolWrite, map[string]any{"value": "down"})
			if err != nil || refusal(res) != "STORE_UNAVAILABLE" {
				t.Fatalf("%s: a write with the store down: %v %v; want STORE_UNAVAILABLE", era, refusal(res), err)
			}
		}
		cs := sessions["2026-07-28"]
		for _, d := range []struct{ method, path string }{
			{"POST", "/v1/servers/fx/tools/block"}, {"POST", "/v1/servers/fx/tools/approve"}, {"DELETE", "/v1/writes/fx"},
		} {
			var fail struct{ Error struct{ Code string } }
			if code := i3.api(t, d.method, d.path, map[string]any{"tools": []string{fixture.ToolEcho}}, &fail); code != http.StatusServiceUnavailable || fail.Error.Code != "STORE_UNAVAILABLE" {
				t.Fatalf("%s %s with the store down: %d %+v; want 503 STORE_UNAVAILABLE", d.method, d.path, code, fail)
			}
		}
		time.Sleep(10 * time.Second)
		tm.pg.Start(t)
		wardentest.WaitFor(t, 30*time.Second, "writes admitted again", func() bool {
			res, err := tryCall(t, cs, "fx__"+fixture.ToolWrite, map[string]any{"value": "up"})
			return err == nil && refusal(res) == ""
		})
		if code := i3.api(t, "POST", "/v1/servers/fx/tools/block", map[string]any{"tools": []string{fixture.ToolEcho}}, nil); code != http.StatusOK {
			t.Fatalf("blocking on i3 after the store came back: %d", code)
		}
		for _, in := range tm.inst {
			wardentest.WaitFor(t, 10*time.Second, "the block seen on "+in.name, func() bool { return in.toolStatus(t, "fx", fixture.ToolEcho) == "blocked" })
		}
	})

	t.Run("instances", func(t *testing.T) {
		var list []struct {
			Listen string `json:"listen"`
			Gone   bool   `json:"gone"`
		}
		if code := i1.api(t, "GET", "/v1/instances", nil, &list); code != http.StatusOK {
			t.Fatalf("GET /v1/instances: %d", code)
		}
		for _, in := range tm.inst {
			if !slices.ContainsFunc(list, func(l struct {
				Listen string `json:"listen"`
				Gone   bool   `json:"gone"`
			}) bool {
				return l.Listen == in.addr && !l.Gone
			}) {
				t.Errorf("GET /v1/instances does not list %s (%s) as running: %+v", in.name, in.addr, list)
			}
		}
	})
}
