package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// limDial opens a raw connection to addr and closes it when the test ends.
func limDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// limTrickle writes s one byte at a time, every 20ms, until the connection
// fails or s is written (then it is the server that did not close it).
func limTrickle(c net.Conn, s string) {
	go func() {
		for i := range len(s) {
			if _, err := c.Write([]byte{s[i]}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond) // paces the trickle: a slow client
		}
	}()
}

// limWaitClosed waits until the server closes c (a read ends in EOF or a
// reset). within only bounds a failing test.
func limWaitClosed(t *testing.T, what string, c net.Conn, within time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the connection is still open after %s", what, within)
	}
}

// Connections that send nothing, idle between requests, or trickle their
// headers or body are closed at the limits; an event stream, a client
// session's stream and a call that each last many times those limits are
// not touched.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	wardentest.WriteConfig(t, cfg, map[string]any{"up": map[string]any{"url": f.Serve(t), "trusted": true}})
	const limit = 300 * time.Millisecond
	w := wardentest.StartWith(t, cfg, filepath.Join(dir, "state"), func(o *daemon.Options) {
		o.Limits = daemon.Limits{ReadHeaderTimeout: limit, BodyTimeout: limit, WriteTimeout: limit, IdleTimeout: limit}
	})
	w.WaitReady(t, "up")

	// An operator's event stream and an MCP client with its stream open.
	req, _ := http.NewRequest("GET", w.URL("/v1/events"), nil)
	req.Header.Set("Authorization", "Bearer "+w.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "limits", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	// The client lets its idle connections go before the server does, as
	// clients do, so that no request meets a connection being closed.
	hc := &http.Client{Transport: &http.Transport{IdleConnTimeout: limit / 3}}
	cs, err := c.Connect(ctxT(t, 20*time.Second), &mcp.StreamableClientTransport{Endpoint: w.URL("/mcp"), HTTPClient: hc}, wardentest.Session2025)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	long := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "up__" + fixture.ToolRead,
			Arguments: map[string]any{"key": "k", "sleep_ms": 10 * limit.Milliseconds()}})
		long <- answer{res, err}
	}()

	silent := limDial(t, w.Addr)
	idle := limDial(t, w.Addr)
	fmt.Fprint(idle, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if r, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil || r.StatusCode != 200 {
		t.Fatalf("/healthz on a kept-alive connection: %v", err)
	}
	slowHeaders := limDial(t, w.Addr)
	limTrickle(slowHeaders, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "+strings.Repeat("a", 2000)+"\r\n\r\n")
	slowBody := limDial(t, w.Addr)
	fmt.Fprint(slowBody, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 2000\r\n\r\n")
	limTrickle(slowBody, strings.Repeat(" ", 2000))

	limWaitClosed(t, "a connection that sent nothing", silent, 20*time.Second)
	limWaitClosed(t, "a kept-alive connection with no request", idle, 20*time.Second)
	limWaitClosed(t, "a connection trickling its headers", slowHeaders, 20*time.Second)
	limWaitClosed(t, "a connection trickling its body", slowBody, 20*time.Second)

	if a := <-long; a.err != nil || a.res.IsError {
		t.Fatalf("a call lasting 10 times the limits: %v %+v", a.err, a.res)
	}
	if !f.ChangeToolsUntil(changed, 15*time.Second) {
		t.Fatal("no tools/list_changed reached the client's stream")
	}
	if code := w.API(t, "POST", "/v1/servers/up/quarantine", nil, nil); code != 200 {
		t.Fatalf("quarantine: %d", code)
	}
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("the event stream ended: %v", err)
		}
		if strings.HasPrefix(line, "event: tools") {
			break
		}
	}
}

// Client sessions are capped: with every session used, one over the cap is
// refused with an answer that says why, the sessions open keep working, and
// a session that ends makes room. (An unused session makes room for a new
// one: TestSessionFloodLeavesRoom.)
func TestSessionsOverTheCapAreRefused(t *testing.T) {
	f := fixture.NewServer(fixture.Options{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	wardentest.WriteConfig(t, cfg, map[string]any{"up": map[string]any{"url": f.Serve(t), "trusted": true}})
	w := wardentest.StartWith(t, cfg, filepath.Join(dir, "state"), func(o *daemon.Options) { o.Limits.MaxSessions = 3 })
	w.WaitReady(t, "up")
	open := []*mcp.ClientSession{w.Connect(t, "/mcp", nil), w.Connect(t, "/mcp/up", nil), w.Connect(t, "/mcp", nil)}
	for _, cs := range open {
		wardentest.ToolNames(t, cs)
	}

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, _ := http.NewRequest("POST", w.URL("/mcp/up"), strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Error struct{ Message string } `json:"error"`
	}
	err = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(answer.Error.Message, "3 client sessions open, its limit") {
		t.Fatalf("a 4th session: %d %+v (%v), want 503 naming the limit", resp.StatusCode, answer, err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "fourth", Version: "1"}, nil)
	if cs, err := c.Connect(ctxT(t, 20*time.Second), &mcp.StreamableClientTransport{Endpoint: w.URL("/mcp")}, wardentest.Session2025); err == nil {
		cs.Close()
		t.Fatal("an SDK client opened a 4th session")
	}
	for _, cs := range open {
		if _, err := cs.ListTools(ctxT(t, 10*time.Second), nil); err != nil {
			t.Fatalf("a session open before the cap was reached: %v", err)
		}
	}

	open[0].Close()
	wardentest.WaitFor(t, 20*time.Second, "a new session once one ended", func() bool {
		cs, err := c.Connect(ctxT(t, 20*time.Second), &mcp.StreamableClientTransport{Endpoint: w.URL("/mcp")}, wardentest.Session2025)
		if err == nil {
			cs.Close()
		}
		return err == nil
	})
}

// With every connection the limit allows in an /mcp request, more /mcp
// requests are turned away at once, and /healthz and the operator API still
// answer.
func TestHealthzAnswersWhileMCPIsSaturated(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	wardentest.WriteConfig(t, cfg, map[string]any{})
	w := wardentest.StartWith(t, cfg, filepath.Join(dir, "state"), func(o *daemon.Options) { o.Limits.MaxConns = 32 })

	// Requests whose body never comes: each holds its connection in an
	// /mcp request (until the body limit, 30s by default), or is turned
	// away at once: at least those beyond the 32 connections.
	const n = 40
	var ended atomic.Int32
	for range n {
		c := limDial(t, w.Addr)
		fmt.Fprint(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n")
		go func() {
			r, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err == nil && r.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("an /mcp request over the limit answered %d", r.StatusCode)
			}
			ended.Add(1) // turned away (503), or its connection closed for a new one
		}()
	}
	wardentest.WaitFor(t, 20*time.Second, "the /mcp requests beyond the limit turned away", func() bool { return ended.Load() >= n-32 })
	client := &http.Client{Timeout: 20 * time.Second}
	for range 3 {
		resp, err := client.Get(w.URL("/healthz"))
		if err != nil {
			t.Fatalf("/healthz while /mcp is saturated: %v", err)
		}
		resp.Body.Close()
	}
	var st map[string]any
	if code := w.API(t, "GET", "/v1/status", nil, &st); code != 200 {
		t.Fatalf("/v1/status while /mcp is saturated: %d", code)
	}
}

// limRow returns the fields after name in a /proc/PID/limits row.
func limRow(limits, name string) []string {
	for line := range strings.SplitSeq(limits, "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}

// A real `warden serve` with few file descriptors and far more idle
// connections than it has descriptors for never runs out of them: it
// closes the connections idle longest, and /healthz answers.
func TestIdleConnectionsDoNotExhaustFileDescriptors(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	listen := "127.0.0.1:" + itoa(testenv.FreePort(t))
	if err := os.WriteFile(cfgPath, []byte(`{"listen": "`+listen+`", "mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testenv.BuildBinary(t, "./cmd/warden")
	p := testenv.StartProcess(t, exec.Command("sh", "-c", `ulimit -Sn 64 && ulimit -Hn 256 && exec "$0" serve --config "$1" --state-dir "$2"`,
		bin, cfgPath, filepath.Join(dir, "state")))
	testenv.WaitHTTP(t, "http://"+listen+"/healthz", 20*time.Second)
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", p.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if f := limRow(string(limits), "Max open files"); len(f) < 2 || f[0] != "256" || f[1] != "256" {
		t.Fatalf("open-file limit of warden serve (soft, hard) = %q, want the soft limit raised to the hard 256", f)
	}

	const n = 1000
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range n {
		c, err := net.Dial("tcp", listen)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		conns = append(conns, c)
	}
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Get("http://" + listen + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with %d idle connections: %v\n%s", n, err, p.Output())
	}
	resp.Body.Close()
	out := p.Output()
	if strings.Contains(out, "too many open files") {
		t.Fatalf("warden ran out of file descriptors:\n%s", out)
	}
	if !strings.Contains(out, "at the client connection limit") {
		t.Fatalf("warden did not report reaching its connection limit:\n%s", out)
	}
}
