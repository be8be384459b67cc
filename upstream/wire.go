package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"syscall"
	"time"
)

// wireTransport carries the POSTs of a plain-HTTP upstream (every call and
// answer Warden sends) on the caller's own goroutine: the request is written
// and its response read where the call runs, on a pool of kept-alive
// connections. net/http's transport hands each request to a writer and a
// reader goroutine per connection; on a small machine those hand-offs were
// a large part of what Warden added to a call. Everything else (https,
// proxies, the long-lived GET stream, DELETE) goes to the standard
// transport.
//
// It stays because BenchmarkToolCall shows it is needed (6 December 2026,
// four runs beside a build sending everything through the standard
// transport): at one client, what Warden adds to a 2026-07-28 call is no
// more than the standard library's reverse proxy adds in 3 of 4 runs with
// it (+285 to +528 µs; the proxy +298 to +575) and in 1 of 4 without it
// (+309 to +663 µs); to a 2025 call it adds +236 to +308 µs with it and
// +285 to +337 without.
//
// Either way, a request counts as dispatched (see Dispatch) once its body
// has been written.
type wireTransport struct {
	fallback *http.Transport
	dialer   net.Dialer

	mu      sync.Mutex
	idle    map[string][]*wireConn // by host:port, most recently used last
	sweeper *time.Timer            // armed while connections are idle
}

const (
	wireMaxIdle     = 64               // kept-alive connections per host
	wireIdleTimeout = 90 * time.Second // an idle connection older than this is closed, not reused
	wireSweepEvery  = 5 * time.Second  // how often idle connections are checked
)

func newWireTransport() *wireTransport {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = wireMaxIdle
	base.IdleConnTimeout = wireIdleTimeout
	return &wireTransport{fallback: base, dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		idle: map[string][]*wireConn{}}
}

// wireConn is one kept-alive connection.
type wireConn struct {
	net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	idleAt time.Time
}

func (t *wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.inline(req) {
		return t.fallback.RoundTrip(withDispatchTrace(req))
	}
	ctx := req.Context()
	host := hostPort(req)
	c, err := t.get(ctx, host)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// Cancelling the call cuts the connection, wherever the exchange is.
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	if err := ctx.Err(); err != nil {
		// Abandoned already: send nothing (the cut above may come too late
		// to stop the write).
		if stop() {
			t.put(host, c)
		} else {
			c.Close()
		}
		closeBody(req)
		return nil, err
	}
	resp, err := c.exchange(req)
	if err != nil {
		stop()
		c.Close()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, err
	}
	body := &wireBody{ReadCloser: resp.Body, ctx: ctx, t: t, c: c, host: host, stop: stop,
		keep: !resp.Close && !req.Close}
	if resp.Body == http.NoBody {
		body.finish(true) // nothing to read: the connection is free now
	} else {
		resp.Body = body
	}
	return resp, nil
}

// inline reports whether req goes the inline way.
func (t *wireTransport) inline(req *http.Request) bool {
	if req.Method != http.MethodPost || req.URL.Scheme != "http" {
		return false
	}
	p, err := t.fallback.Proxy(req)
	return err == nil && p == nil
}

func hostPort(req *http.Request) string {
	host := req.URL.Host
	if req.URL.Port() == "" {
		host = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	return host
}

// get takes an idle connection that is still open, or dials one.
func (t *wireTransport) get(ctx context.Context, host string) (*wireConn, error) {
	for {
		t.mu.Lock()
		list := t.idle[host]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		c := list[len(list)-1]
		t.idle[host] = list[:len(list)-1]
		t.mu.Unlock()
		if time.Since(c.idleAt) < wireIdleTimeout && c.open() {
			return c, nil
		}
		c.Close()
	}
	nc, err := t.dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	return &wireConn{Conn: nc, br: bufio.NewReaderSize(nc, 16<<10), bw: bufio.NewWriterSize(nc, 16<<10)}, nil
}

// put keeps c for the next request.
// (A connection given back has no deadline: one is set only to cut an
// exchange, and the connection is closed then.)
func (t *wireTransport) put(host string, c *wireConn) {
	c.idleAt = time.Now()
	t.mu.Lock()
	if len(t.idle[host]) < wireMaxIdle {
		t.idle[host] = append(t.idle[host], c)
		c = nil
		if t.sweeper == nil {
			t.sweeper = time.AfterFunc(wireSweepEvery, t.sweep)
		}
	}
	t.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// sweep closes the idle connections that timed out or that the server
// closed (a busy pool reuses its newest connections and would otherwise
// keep the others open for good), and comes back while any are left.
func (t *wireTransport) sweep() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for host, list := range t.idle {
		kept := list[:0]
		for _, c := range list {
			if time.Since(c.idleAt) < wireIdleTimeout && c.open() {
				kept = append(kept, c)
			} else {
				c.Close()
			}
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(t.idle, host)
		} else {
			t.idle[host] = kept
		}
	}
	t.sweeper = nil
	if len(t.idle) > 0 {
		t.sweeper = time.AfterFunc(wireSweepEvery, t.sweep)
	}
}

// CloseIdleConnections closes every kept-alive connection.
func (t *wireTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*wireConn{}
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.Close()
		}
	}
	t.fallback.CloseIdleConnections()
}

// open reports whether the server still has the idle connection open: a
// read that would block means it does; end of file, an error or stray bytes
// mean it is of no use. (net/http learns this with a reader goroutine per
// connection; one non-blocking read when the connection is taken is cheaper.)
func (c *wireConn) open() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, err := syscall.Read(int(fd), b[:])
		alive = errors.Is(err, syscall.EAGAIN)
		return true
	})
	return err == nil && alive
}

// exchange writes req and reads the response head.
func (c *wireConn) exchange(req *http.Request) (*http.Response, error) {
	if err := c.write(req); err != nil {
		return nil, err
	}
	markSent(req.Context())
	for range 5 { // as many informational answers as net/http takes
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, fmt.Errorf("the upstream switched protocols (101), which Warden did not ask for")
		case resp.StatusCode >= 200:
			return resp, nil
		}
		resp.Body.Close() // an informational answer: the real one follows
	}
	return nil, fmt.Errorf("the upstream sent too many informational (1xx) answers")
}

func (c *wireConn) write(req *http.Request) error {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return err
		}
		body = b
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	bw := c.bw
	fmt.Fprintf(bw, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", req.URL.RequestURI(), host, len(body))
	if req.Close {
		bw.WriteString("Connection: close\r\n")
	}
	if req.Header.Get("User-Agent") == "" {
		bw.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	if err := req.Header.WriteSubset(bw, wireOwnHeaders); err != nil {
		return err
	}
	bw.WriteString("\r\n")
	bw.Write(body)
	return bw.Flush()
}

// wireOwnHeaders are written by wireConn.write itself.
var wireOwnHeaders = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true}

// wireBody is a response body on a wire connection: read to its end, the
// connection goes back to the pool; closed before, the connection is closed.
type wireBody struct {
	io.ReadCloser
	ctx  context.Context
	t    *wireTransport
	c    *wireConn
	host string
	stop func() bool
	keep bool

	mu   sync.Mutex
	done bool
}

func (b *wireBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
		if err != io.EOF && b.ctx.Err() != nil {
			err = b.ctx.Err() // the call was abandoned: say so, not "i/o timeout"
		}
	}
	return n, err
}

func (b *wireBody) Close() error {
	if !b.finish(false) {
		return nil
	}
	// The connection is closed: what the body says about reading from it
	// (or draining it) is beside the point.
	b.ReadCloser.Close()
	return nil
}

// finish gives the connection back (the body was read to its end) or closes
// it, once; it reports whether this call did either.
func (b *wireBody) finish(atEOF bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return false
	}
	b.done = true
	if b.stop() && atEOF && b.keep {
		b.t.put(b.host, b.c)
		return true
	}
	b.c.Close()
	return true
}

// withDispatchTrace marks a call dispatched once the standard transport has
// written its request.
func withDispatchTrace(req *http.Request) *http.Request {
	ctx := req.Context()
	if _, ok := CallFrom(ctx); !ok {
		return req
	}
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			markSent(ctx)
		}
	}}
	return req.WithContext(httptrace.WithClientTrace(ctx, trace))
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
