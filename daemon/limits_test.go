package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// The limits are tests of timing: they run on synctest's clock, over a
// network in memory.

// serveLimited serves h behind a connLimit of n connections.
func serveLimited(t *testing.T, n int, lim Limits, h http.Handler) (*connLimit, *testenv.MemNet) {
	t.Helper()
	mem := testenv.NewMemNet(t)
	lim = lim.withDefaults(1 << 16)
	cl := newConnLimit(mem.Listen(), n, slog.New(slog.DiscardHandler))
	srv := &http.Server{Handler: cl.handler(lim, h), ReadHeaderTimeout: lim.ReadHeaderTimeout, IdleTimeout: lim.IdleTimeout,
		ConnState: cl.connState, ConnContext: cl.connContext}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	return cl, mem
}

// dial connects to mem and waits until the server has taken the
// connection in; the next one is accepted a millisecond later.
func dial(t *testing.T, mem *testenv.MemNet) net.Conn {
	t.Helper()
	c, err := mem.DialContext(context.Background(), "tcp", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	synctest.Wait()
	time.Sleep(time.Millisecond)
	return c
}

// closed reports whether the server closed c within a second (far less
// than the read-header timeout, which closes a silent connection anyway).
func closed(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// At the limit a new connection takes the place of the one idle longest;
// one in a request is never closed for it, and when every one is in a
// request the new one is turned away.
func TestConnLimitClosesTheIdlest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		busy := make(chan struct{}, 8)
		cl, mem := serveLimited(t, 3, Limits{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			busy <- struct{}{}
			<-release
		}))
		first := dial(t, mem)
		inRequest := dial(t, mem)
		fmt.Fprint(inRequest, "GET /hold HTTP/1.1\r\nHost: memnet.test\r\n\r\n")
		<-busy
		third := dial(t, mem)
		if n := cl.open(); n != 3 {
			t.Fatalf("%d connections open, want 3", n)
		}

		dial(t, mem) // the fourth: the first goes
		if !closed(first) {
			t.Fatal("the connection idle longest was not closed for a new one")
		}
		fifth := dial(t, mem) // the third goes, not the one in a request
		if !closed(third) {
			t.Fatal("the idle connection was not closed for a new one")
		}
		fmt.Fprint(fifth, "GET /hold HTTP/1.1\r\nHost: memnet.test\r\n\r\n")
		<-busy
		// Now two are in a request and the fourth is idle: the sixth replaces
		// it; then all three are in a request and a seventh is turned away.
		sixth := dial(t, mem)
		fmt.Fprint(sixth, "GET /hold HTTP/1.1\r\nHost: memnet.test\r\n\r\n")
		<-busy
		if !closed(dial(t, mem)) {
			t.Fatal("a connection over the limit, with every other in a request, was kept")
		}
		inRequest.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := inRequest.Read(make([]byte, 1)); err == nil || !err.(net.Error).Timeout() {
			t.Fatalf("a connection in a request was closed: %v", err)
		}
	})
}

// A client that stops reading is dropped at the write limit; a handler
// that writes nothing for longer than the limit, then answers, is not.
func TestWriteLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit = 200 * time.Millisecond
		failed := make(chan error, 1)
		_, mem := serveLimited(t, 10, Limits{WriteTimeout: limit}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/late" {
				time.Sleep(3 * limit) // a long call
				fmt.Fprint(w, "late answer")
				return
			}
			chunk := make([]byte, 64<<10)
			for {
				if _, err := w.Write(chunk); err != nil {
					failed <- err
					return
				}
				w.(http.Flusher).Flush()
			}
		}))
		resp, err := mem.Client().Get(testenv.MemURL + "/late")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != "late answer" {
			t.Fatalf("an answer after 3 times the write limit: %q, %v", b, err)
		}

		start := time.Now()
		c := dial(t, mem)
		fmt.Fprint(c, "GET /flood HTTP/1.1\r\nHost: memnet.test\r\n\r\n") // and never read
		select {
		case <-failed:
		case <-time.After(time.Minute):
			t.Fatal("writing to a client that does not read still blocks")
		}
		if waited := time.Since(start); waited < limit || waited > 2*limit {
			t.Fatalf("a client that does not read was dropped after %v, want the write limit, %v", waited, limit)
		}
	})
}

// What the limits cost a request: the same loopback server with and
// without them.
//
//	go test -run '^$' -bench BenchmarkLimits -count 5 ./daemon/
func BenchmarkLimits(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	})
	for _, limited := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "limited"}[limited], func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			srv := &http.Server{Handler: h}
			var l net.Listener = ln
			if limited {
				lim := Limits{}.withDefaults(1 << 16)
				cl := newConnLimit(ln, lim.MaxConns, slog.New(slog.DiscardHandler))
				srv = &http.Server{Handler: cl.handler(lim, h), ReadHeaderTimeout: lim.ReadHeaderTimeout, IdleTimeout: lim.IdleTimeout,
					ConnState: cl.connState, ConnContext: cl.connContext}
				l = cl
			}
			go srv.Serve(l)
			defer srv.Close()
			url := "http://" + ln.Addr().String() + "/mcp"
			for b.Loop() {
				resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
