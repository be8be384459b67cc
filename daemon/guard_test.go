package daemon

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/api"
)

func guarded(listenHost string) (http.Handler, *int) {
	reached := new(int)
	return guard([]string{listenHost}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*reached++
		w.WriteHeader(http.StatusTeapot)
	})), reached
}

func serve(h http.Handler, host, origin string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "http://127.0.0.1:7373/mcp", strings.NewReader("{}"))
	r.Host = host
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestGuardHost(t *testing.T) {
	h, reached := guarded("127.0.0.1")
	for _, host := range []string{
		"127.0.0.1:7373", "127.0.0.1", "localhost", "localhost:7373", "LOCALHOST:80",
		"[::1]:7373", "[::1]", "127.0.0.2:7373",
	} {
		if rec := serve(h, host, ""); rec.Code != http.StatusTeapot {
			t.Errorf("Host %q: %d, want it allowed", host, rec.Code)
		}
	}
	n := *reached
	for _, host := range []string{
		"evil.example", "evil.example:7373", "127.0.0.1.evil.example", "localhost.evil.example:7373",
		"10.0.0.1:7373", "0.0.0.0:7373", "", "127.1", "[::ffff:8.8.8.8]:7373",
	} {
		rec := serve(h, host, "")
		if rec.Code != http.StatusForbidden {
			t.Errorf("Host %q: %d, want 403", host, rec.Code)
		}
		if host != "" && !strings.Contains(rec.Body.String(), "Host") {
			t.Errorf("Host %q refused without saying why: %q", host, rec.Body.String())
		}
	}
	if *reached != n {
		t.Fatal("a refused request reached the handler")
	}
}

func TestGuardListenHost(t *testing.T) {
	// Listening on a LAN address: that address is also a valid Host.
	h, _ := guarded("192.168.1.5")
	if rec := serve(h, "192.168.1.5:7373", "http://192.168.1.5:7373"); rec.Code != http.StatusTeapot {
		t.Errorf("the listen host: %d, want it allowed", rec.Code)
	}
	if rec := serve(h, "192.168.1.6:7373", ""); rec.Code != http.StatusForbidden {
		t.Errorf("another LAN host: %d, want 403", rec.Code)
	}
	if rec := serve(h, "localhost:7373", ""); rec.Code != http.StatusTeapot {
		t.Errorf("localhost with a LAN listen host: %d, want it allowed", rec.Code)
	}
}

func TestGuardOrigin(t *testing.T) {
	h, reached := guarded("127.0.0.1")
	for _, origin := range []string{
		"http://localhost:1234", "http://localhost", "https://localhost:8443",
		"http://127.0.0.1:5173", "http://[::1]:3000",
	} {
		if rec := serve(h, "127.0.0.1:7373", origin); rec.Code != http.StatusTeapot {
			t.Errorf("Origin %q: %d, want it allowed", origin, rec.Code)
		}
	}
	n := *reached
	for _, origin := range []string{
		"http://evil.example", "https://evil.example:1234", "http://localhost.evil.example",
		"http://127.0.0.1.evil.example", "null", "file://", "ftp://localhost",
		"chrome-extension://abcdef", "not a url at all", "http://10.0.0.1",
	} {
		rec := serve(h, "127.0.0.1:7373", origin)
		if rec.Code != http.StatusForbidden {
			t.Errorf("Origin %q: %d, want 403", origin, rec.Code)
		}
		if !strings.Contains(rec.Body.String(), "Origin") {
			t.Errorf("Origin %q refused without saying why: %q", origin, rec.Body.String())
		}
	}
	if *reached != n {
		t.Fatal("a refused request reached the handler")
	}
	// A good Origin does not excuse a bad Host.
	if rec := serve(h, "evil.example", "http://localhost:1234"); rec.Code != http.StatusForbidden {
		t.Errorf("bad Host with a good Origin: %d, want 403", rec.Code)
	}
}

// A refused /v1 request is answered in the API's error format, with the
// status kept; other paths keep their plain text.
func TestGuardAPIRefusalsAreJSON(t *testing.T) {
	h, _ := guarded("127.0.0.1")
	for _, c := range []struct{ path, host, origin, code string }{
		{"/v1/status", "evil.example", "", "forbidden_host"},
		{"/v1", "evil.example:7373", "", "forbidden_host"},
		{"/v1/servers", "127.0.0.1:7373", "http://evil.example", "forbidden_origin"},
	} {
		r := httptest.NewRequest("GET", "http://127.0.0.1:7373"+c.path, nil)
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		var e api.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != http.StatusForbidden || err != nil ||
			rec.Header().Get("Content-Type") != "application/json" || e.Error.Code != c.code || !strings.HasPrefix(e.Error.Message, "Forbidden: ") {
			t.Errorf("%s (Host %q, Origin %q): %d %q %s", c.path, c.host, c.origin, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	}
	r := httptest.NewRequest("GET", "http://127.0.0.1:7373/ui/", nil)
	r.Host = "evil.example"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden || !strings.HasPrefix(rec.Body.String(), "Forbidden: Host") {
		t.Errorf("/ui/ refused as: %d %q", rec.Code, rec.Body)
	}
}

// Behind a name (publicURL): that host is a valid Host and Origin too.
func TestGuardPublicHost(t *testing.T) {
	h := guard([]string{"0.0.0.0", "warden.example.com"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	if rec := serve(h, "warden.example.com", "https://warden.example.com"); rec.Code != http.StatusTeapot {
		t.Errorf("the public host: %d, want it allowed", rec.Code)
	}
	if rec := serve(h, "evil.example", ""); rec.Code != http.StatusForbidden {
		t.Errorf("another host: %d, want 403", rec.Code)
	}
}

// The identity provider sends the browser back to /ui/callback with a
// cross-site top-level GET: Chromium sends it with no Origin and the
// provider's page as Referer (seen in e2e TestOperatorsLogIn). The guard
// lets it through to the page, which checks the login's state.
func TestGuardLetsTheLoginCallbackIn(t *testing.T) {
	h, reached := guarded("warden.example.com")
	r := httptest.NewRequest("GET", "http://warden.example.com/ui/callback?code=c&state=s", nil)
	r.Header.Set("Referer", "https://idp.example.com/")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusTeapot || *reached != 1 {
		t.Fatalf("the provider's redirect back: %d %s", rec.Code, rec.Body)
	}
}
