package upstream

import (
	"net/http"
	"net/http/httptrace"
	"time"
)

// headerTransport adds the live config's headers to every upstream request and
// marks the dispatch boundary: a request counts as sent once its body has been
// written to the connection. Headers come from the config on each request and
// are never stored anywhere else.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

func newHeaderTransport(headers map[string]string) *headerTransport {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	base.IdleConnTimeout = 90 * time.Second
	return &headerTransport{headers: headers, next: base}
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	ctx := req.Context()
	if _, ok := ctx.Value(dispatchKey{}).(*Dispatch); ok {
		trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				markSent(ctx)
			}
		}}
		req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	}
	return t.next.RoundTrip(req)
}
