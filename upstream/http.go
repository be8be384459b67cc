package upstream

import (
	"net/http"

	"github.com/wardenmcp/warden/config"
)

// headerTransport adds the live config's headers to every upstream request.
// Headers come from the config on each request and are never stored
// anywhere else. Below it, the wire transport marks the dispatch boundary.
type headerTransport struct {
	headers map[string]string
	next    *wireTransport
	rt      http.RoundTripper // next, or the Authorizer's transport around it
}

func newHeaderTransport(headers map[string]string) *headerTransport {
	w := newWireTransport()
	return &headerTransport{headers: headers, next: w, rt: w}
}

// authorize sends requests through a's transport for cfg.
func (t *headerTransport) authorize(a Authorizer, cfg *config.Server) {
	if usesAuth(a, cfg) {
		t.rt = a.Transport(cfg, t.next)
	}
}

// CloseIdleConnections closes the kept-alive connections.
func (t *headerTransport) CloseIdleConnections() { t.next.CloseIdleConnections() }

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.rt.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.rt.RoundTrip(req)
}
