package upstream

import "net/http"

// headerTransport adds the live config's headers to every upstream request.
// Headers come from the config on each request and are never stored
// anywhere else. Below it, the wire transport marks the dispatch boundary.
type headerTransport struct {
	headers map[string]string
	next    *wireTransport
}

func newHeaderTransport(headers map[string]string) *headerTransport {
	return &headerTransport{headers: headers, next: newWireTransport()}
}

// CloseIdleConnections closes the kept-alive connections.
func (t *headerTransport) CloseIdleConnections() { t.next.CloseIdleConnections() }

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.next.RoundTrip(req)
}
