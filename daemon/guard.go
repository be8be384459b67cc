package daemon

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/surface"
)

// guard rejects requests whose Host or Origin is not this machine's loopback
// (or one of hosts: the configured listen host, publicURL's): a web page
// the user visits must not be able to reach Warden through DNS rebinding
// or a cross-site request.
func guard(hosts []string, next http.Handler) http.Handler {
	allowed := func(host string) bool {
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		h = strings.Trim(h, "[]")
		if strings.EqualFold(h, "localhost") || slices.ContainsFunc(hosts, func(x string) bool { return x != "" && strings.EqualFold(h, x) }) {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forbid := func(code, why string) {
			switch {
			case surface.IsMCP(r):
				surface.Refuse(w, r, http.StatusForbidden, why)
			case r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/"):
				api.Fail(w, http.StatusForbidden, code, why)
			default:
				http.Error(w, why, http.StatusForbidden)
			}
		}
		if !allowed(r.Host) {
			forbid("forbidden_host", "Forbidden: Host "+r.Host+" is not this machine; Warden answers only loopback host names (reach it as 127.0.0.1 or localhost)")
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !allowed(u.Host) {
				forbid("forbidden_origin", "Forbidden: Origin "+o+" is not allowed; Warden answers only pages served from this machine's loopback")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
