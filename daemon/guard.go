package daemon

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// guard rejects requests whose Host or Origin is not this machine's loopback
// (or the configured listen host): a web page the user visits must not be
// able to reach Warden through DNS rebinding or a cross-site request.
func guard(listenHost string, next http.Handler) http.Handler {
	allowed := func(host string) bool {
		h := host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			h = hh
		}
		h = strings.Trim(h, "[]")
		if strings.EqualFold(h, "localhost") || (listenHost != "" && strings.EqualFold(h, listenHost)) {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed(r.Host) {
			http.Error(w, "Forbidden: Host "+r.Host+" is not this machine; Warden answers only loopback host names", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !allowed(u.Host) {
				http.Error(w, "Forbidden: Origin "+o+" is not allowed; Warden answers only pages served from this machine's loopback", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
