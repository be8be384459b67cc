package store_test

import (
	"io"
	"net"
	"slices"
	"sync"
	"testing"
)

// proxy forwards loopback TCP connections to target; cut drops them, as a
// lost network or a dying server does, and refuses new ones until restore.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	l      net.Listener
	pairs  [][2]*net.TCPConn // client side, server side
	orphan []*net.TCPConn    // server sides left open by a cut
	wg     sync.WaitGroup
}

// How cut drops the connections.
type cutMode int

const (
	reset  cutMode = iota // both sides get a reset (RST)
	closed                // both sides get a goodbye (FIN)
	// The client's side is reset, the server's stays open: the server
	// does not notice, as when a network between them drops.
	unnoticed
)

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, addr: "127.0.0.1:0", target: target}
	p.restore()
	p.addr = p.l.Addr().String()
	t.Cleanup(func() {
		p.cut(closed)
		for _, u := range p.orphan {
			u.Close()
		}
		p.wg.Wait()
	})
	return p
}

func (p *proxy) restore() {
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			client, err := l.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				client.Close()
				continue
			}
			c, u := client.(*net.TCPConn), server.(*net.TCPConn)
			p.mu.Lock()
			p.pairs = append(p.pairs, [2]*net.TCPConn{c, u})
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(u, c); p.goodbye(u) }()
			go func() { defer p.wg.Done(); io.Copy(c, u); p.goodbye(c) }()
		}
	}()
}

// goodbye passes an end of stream on to conn, unless a cut left it open.
func (p *proxy) goodbye(conn *net.TCPConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.orphan, conn) {
		conn.CloseWrite()
	}
}

func (p *proxy) cut(mode cutMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.l.Close()
	for _, pair := range p.pairs {
		c, u := pair[0], pair[1]
		if mode != closed {
			c.SetLinger(0)
			u.SetLinger(0)
		}
		c.Close()
		if mode == unnoticed {
			p.orphan = append(p.orphan, u)
			continue
		}
		u.Close()
	}
	p.pairs = nil
}
