package testenv_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// HAProxy spreads requests over its backends in turn, and keeps serving
// when one goes away.
func TestHAProxyRoundRobin(t *testing.T) {
	var urls []string
	var srvs []*httptest.Server
	for i := range 3 {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, i) }))
		t.Cleanup(s.Close)
		srvs = append(srvs, s)
		urls = append(urls, strings.TrimPrefix(s.URL, "http://"))
	}
	h := testenv.StartHAProxy(t, "/healthz", urls...)
	seen := map[string]int{}
	for range 9 {
		resp, err := http.Get("http://" + h.Addr + "/x")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen[string(b)]++
	}
	if len(seen) != 3 {
		t.Fatalf("requests over one keep-alive client went to %v; want all three backends", seen)
	}
	srvs[1].Close()
	for i := range 6 {
		resp, err := http.Get("http://" + h.Addr + "/x")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d with a backend gone: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
}
