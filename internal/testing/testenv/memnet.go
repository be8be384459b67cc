package testenv

import (
	"context"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
)

// MemNet is a network in memory for tests that run on synctest's fake
// clock, where real sockets cannot go: one address, MemURL, with a
// listener whose Accept returns the far end of each Dial (net.Pipe). Serve
// runs an http.Server there, reached through Client. While no listener is
// open, a dial is refused as at a closed port (a *net.OpError of Op "dial"
// around ECONNREFUSED).
type MemNet struct {
	tr *http.Transport

	mu  sync.Mutex
	srv *http.Server
	ln  *memListener
}

// MemURL is the address a MemNet serves; any path reaches its handler.
const MemURL = "http://memnet.test"

// NewMemNet returns a MemNet with nothing listening. Its server is
// stopped, and its client's idle connections closed, when the test ends.
func NewMemNet(t testing.TB) *MemNet {
	n := &MemNet{}
	n.tr = &http.Transport{DialContext: n.DialContext}
	t.Cleanup(func() {
		n.Stop()
		n.tr.CloseIdleConnections()
	})
	return n
}

// Client is an HTTP client that reaches MemURL (whatever the URL's host).
func (n *MemNet) Client() *http.Client { return &http.Client{Transport: n.tr} }

// Listen opens the address (in place of a listener open before) and
// returns its listener.
func (n *MemNet) Listen() net.Listener {
	ln := &memListener{conns: make(chan net.Conn), done: make(chan struct{})}
	n.mu.Lock()
	n.ln = ln
	n.mu.Unlock()
	return ln
}

// Serve starts serving h, also after a Stop (a restarted server).
func (n *MemNet) Serve(h http.Handler) {
	srv := &http.Server{Handler: h}
	ln := n.Listen()
	n.mu.Lock()
	n.srv = srv
	n.mu.Unlock()
	go srv.Serve(ln)
}

// Stop closes the server and every connection to it; dials are refused
// until the next Serve.
func (n *MemNet) Stop() {
	n.mu.Lock()
	srv := n.srv
	n.srv, n.ln = nil, nil
	n.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// DialContext connects to the address's listener (network and address
// are not looked at).
func (n *MemNet) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	n.mu.Lock()
	ln := n.ln
	n.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
	if ln == nil {
		return nil, refused
	}
	client, server := net.Pipe()
	select {
	case ln.conns <- server:
		return client, nil
	case <-ln.done:
	case <-ctx.Done():
		refused.Err = ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, refused
}

// memListener hands the server the far ends of the pipes dialed.
type memListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) Addr() net.Addr { return memAddr{} }

type memAddr struct{}

func (memAddr) Network() string { return "memnet" }
func (memAddr) String() string  { return "memnet.test:80" }
