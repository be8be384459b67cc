package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// HAProxy is Debian's haproxy balancing HTTP over backends in round robin,
// with no stickiness: each request goes to the next backend that is up.
type HAProxy struct {
	*Process
	Addr string // host:port it listens on
}

// StartHAProxy starts haproxy on a free loopback port in front of backends
// (host:port each), checking each twice a second (GET health, answered
// 2xx; with health "", a TCP connect), and stops it when the test ends. A
// missing haproxy fails the test.
func StartHAProxy(t testing.TB, health string, backends ...string) *HAProxy {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/haproxy"); serr != nil {
			t.Fatal("testenv: haproxy is not installed: apt-get install haproxy (.ci/run does)")
		}
		bin = "/usr/sbin/haproxy"
	}
	h := &HAProxy{Addr: "127.0.0.1:" + strconv.Itoa(FreePort(t))}
	var servers strings.Builder
	for i, b := range backends {
		// A backend that refuses is marked down at once and its request
		// dispatched to another (redispatch); checks bring it back.
		fmt.Fprintf(&servers, "  server w%d %s check inter 500ms fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down\n", i+1, b)
	}
	check := ""
	if health != "" {
		check = "  option httpchk\n  http-check send meth GET uri " + health + " ver HTTP/1.1 hdr Host 127.0.0.1\n"
	}
	cfg := fmt.Sprintf(`global
  maxconn 2000
defaults
  mode http
  timeout connect 1s
  timeout client 120s
  timeout server 120s
  timeout tunnel 1h
  retries 3
  option redispatch 1
%sfrontend warden
  bind %s
  default_backend instances
backend instances
  balance roundrobin
%s`, check, h.Addr, servers.String())
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h.Process = StartProcess(t, exec.Command(bin, "-db", "-f", path))
	WaitFor(t, 10*time.Second, "haproxy listening on "+h.Addr, func() bool { return Dialable(h.Addr) })
	return h
}

// Dialable reports whether a TCP connection to addr succeeds.
func Dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}
