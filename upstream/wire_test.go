package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// countingServer is a loopback HTTP server that counts the connections
// clients open to it.
func countingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func post(t *testing.T, tr http.RoundTripper, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return string(b)
}

// Calls in a row share one connection, with bodies of every framing: a
// length, chunks, and none at all (read or not).
func TestWireKeepsConnectionsAlive(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch string(b) {
		case "chunked":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "data: two\n\n")
		case "empty":
			w.WriteHeader(http.StatusAccepted)
		default:
			io.WriteString(w, "echo "+string(b))
		}
	})
	tr := newWireTransport()
	defer tr.CloseIdleConnections()
	for range 3 {
		if got := readAll(t, post(t, tr, context.Background(), srv.URL, "hello")); got != "echo hello" {
			t.Fatalf("body %q", got)
		}
		if got := readAll(t, post(t, tr, context.Background(), srv.URL, "chunked")); got != "data: one\n\ndata: two\n\n" {
			t.Fatalf("body %q", got)
		}
		resp := post(t, tr, context.Background(), srv.URL, "empty")
		resp.Body.Close() // not read: nothing was left to read
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d connections for 9 calls in a row, want 1", n)
	}
}

// An idle connection the server has closed is not used for the next call:
// the request would be written into a dead connection and its outcome
// (for a write, a latch) unknown.
func TestWireSkipsConnectionsTheServerClosed(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := newWireTransport()
	defer tr.CloseIdleConnections()
	readAll(t, post(t, tr, context.Background(), srv.URL, "one"))
	srv.CloseClientConnections()
	waitIdleClosed(t, tr)
	if got := readAll(t, post(t, tr, context.Background(), srv.URL, "two")); got != "ok" {
		t.Fatalf("body %q", got)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the closed one replaced)", n)
	}
}

// A connection is not reused after a body left unread, nor after the server
// said it closes it.
func TestWireDropsConnectionsItCannotReuse(t *testing.T) {
	srv, conns := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("close") != "" {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, strings.Repeat("x", 100))
	})
	tr := newWireTransport()
	defer tr.CloseIdleConnections()
	post(t, tr, context.Background(), srv.URL, "").Body.Close() // unread
	readAll(t, post(t, tr, context.Background(), srv.URL+"?close=1", ""))
	readAll(t, post(t, tr, context.Background(), srv.URL, ""))
	if n := conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

// Cancelling a call cuts its exchange wherever it is: waiting for the
// answer, or in the middle of a stream.
func TestWireCancelCutsTheExchange(t *testing.T) {
	gone := make(chan struct{}, 2)
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // (net/http notices a client leaving only after that)
		if r.URL.Query().Get("stream") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
		gone <- struct{}{}
	})
	tr := newWireTransport()
	defer tr.CloseIdleConnections()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting for the answer: err %v, want context.Canceled", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	resp := post(t, tr, ctx, srv.URL+"?stream=1", "x")
	br := bufio.NewReader(resp.Body)
	if line, _ := br.ReadString('\n'); line != "data: first\n" {
		t.Fatalf("first line %q", line)
	}
	time.AfterFunc(100*time.Millisecond, cancel)
	if _, err := io.ReadAll(br); !errors.Is(err, context.Canceled) {
		t.Fatalf("in the stream: err %v, want context.Canceled", err)
	}
	resp.Body.Close()
	for range 2 {
		select {
		case <-gone:
		case <-time.After(10 * time.Second):
			t.Fatal("the server never saw the connection end")
		}
	}
}

// A request counts as dispatched once written, and not before: a server
// that cannot be reached was sent nothing.
func TestWireMarksDispatch(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	tr := newWireTransport()
	defer tr.CloseIdleConnections()

	d := &Call{}
	ctx := WithCall(context.Background(), d)
	readAll(t, post(t, tr, ctx, srv.URL, "x"))
	if !d.Sent() {
		t.Fatal("a request the server answered is not marked sent")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	d = &Call{}
	ctx = WithCall(context.Background(), d)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/mcp", strings.NewReader("x"))
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("a POST to a closed port succeeded")
	}
	if d.Sent() {
		t.Fatal("a request that never left is marked sent")
	}
}

// What the wire transport does not carry goes to the standard one, which
// marks dispatch too.
func TestWireLeavesOtherRequestsToTheStandardTransport(t *testing.T) {
	tr := newWireTransport()
	for _, c := range []struct {
		method, url string
		inline      bool
	}{
		{http.MethodPost, "http://127.0.0.1:1/mcp", true},
		{http.MethodGet, "http://127.0.0.1:1/mcp", false},
		{http.MethodDelete, "http://127.0.0.1:1/mcp", false},
		{http.MethodPost, "https://127.0.0.1:1/mcp", false},
	} {
		req, _ := http.NewRequest(c.method, c.url, nil)
		if got := tr.inline(req); got != c.inline {
			t.Errorf("%s %s: inline %v, want %v", c.method, c.url, got, c.inline)
		}
	}
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Method) })
	d := &Call{}
	ctx := WithCall(context.Background(), d)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "GET" || !d.Sent() {
		t.Fatalf("GET: body %q, sent %v", got, d.Sent())
	}
}

// A call abandoned before its request went out sends nothing, even on a
// pooled connection that is ready at once.
func TestWireSendsNothingForAnAbandonedCall(t *testing.T) {
	var got atomic.Int32
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		io.WriteString(w, "ok")
	})
	tr := newWireTransport()
	defer tr.CloseIdleConnections()
	readAll(t, post(t, tr, context.Background(), srv.URL, "warm")) // one connection pooled
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		d := &Call{}
		ctx = WithCall(ctx, d)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
		if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		if d.Sent() {
			t.Fatal("an abandoned call is marked sent")
		}
	}
	if n := got.Load(); n != 1 {
		t.Fatalf("the server got %d requests, want only the first", n)
	}
}

// Idle connections the server closed are closed here too, even when the
// pool never reaches them (a busy pool reuses its newest).
func TestWireSweepsClosedIdleConnections(t *testing.T) {
	arrived, hold := make(chan struct{}, 3), make(chan struct{})
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-hold
		io.WriteString(w, "ok")
	})
	tr := newWireTransport()
	defer tr.CloseIdleConnections()
	resps := make(chan *http.Response, 3)
	for range 3 { // three at once: three connections
		go func() { resps <- post(t, tr, context.Background(), srv.URL, "x") }()
	}
	for range 3 {
		<-arrived
	}
	close(hold)
	for range 3 {
		readAll(t, <-resps)
	}
	if n := idleCount(tr); n != 3 {
		t.Fatalf("%d idle connections, want 3", n)
	}
	srv.CloseClientConnections()
	waitIdleClosed(t, tr)
	tr.sweep()
	if n := idleCount(tr); n != 0 {
		t.Fatalf("%d idle connections after the server closed them all", n)
	}
}

// waitIdleClosed waits until the server's close of every idle connection
// has reached this side (wireConn.open says so).
func waitIdleClosed(t *testing.T, tr *wireTransport) {
	t.Helper()
	testenv.WaitFor(t, 10*time.Second, "the server's close to reach the idle connections", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, list := range tr.idle {
			for _, c := range list {
				if c.open() {
					return false
				}
			}
		}
		return true
	})
}

func idleCount(tr *wireTransport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, list := range tr.idle {
		n += len(list)
	}
	return n
}

// Closing a body early is not an error; a protocol switch Warden did not ask
// for is.
func TestWireBodyCloseAndOddAnswers(t *testing.T) {
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("switch") != "" {
			w.Header().Set("Connection", "Upgrade")
			w.Header().Set("Upgrade", "something")
			w.WriteHeader(http.StatusSwitchingProtocols)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	tr := newWireTransport()
	defer tr.CloseIdleConnections()
	resp := post(t, tr, context.Background(), srv.URL, "x")
	if err := resp.Body.Close(); err != nil {
		t.Fatalf("closing a stream early: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"?switch=1", strings.NewReader("x"))
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "101") {
		t.Fatalf("a 101 answer: err %v", err)
	}
}
