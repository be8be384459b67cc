package daemon

import (
	"fmt"
	"net"
	"strings"

	"github.com/wardenmcp/warden/config"
)

// anonymous says whether cfg may serve callers it does not know, listening
// on addr: with neither "auth" nor "clients", anyone who reaches the port
// may call every approved tool, which on loopback only is one person's
// machine, and elsewhere is refused unless allowAnonymous
// (serve --allow-anonymous). It reports whether callers are anonymous.
func anonymous(cfg *config.Config, addr string, allowAnonymous bool) (bool, error) {
	if cfg.Auth != nil || len(cfg.Clients) > 0 {
		return false, nil
	}
	if loopback(addr) || allowAnonymous {
		return true, nil
	}
	return true, fmt.Errorf(`listening on %s, which is not loopback only, with neither "auth" nor "clients" in the config %s: anyone who reaches it could call every approved tool. `+
		`Set "auth" (an identity provider) or "clients" (bearer tokens), listen on 127.0.0.1, or run warden serve --allow-anonymous to accept it`, addr, cfg.Path)
}

// loopback reports whether host:port addr is reached from this machine
// only: a loopback address, or localhost (an empty host or 0.0.0.0 is
// every interface).
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
