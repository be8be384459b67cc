package wardentest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// Tools is GET /v1/servers/{server}/tools: the store's record of each of
// the server's tools, by name.
func (w *Warden) Tools(t testing.TB, server string) map[string]api.Tool {
	t.Helper()
	var list []api.Tool
	if code := w.API(t, "GET", "/v1/servers/"+server+"/tools", nil, &list); code != http.StatusOK {
		t.Fatalf("GET /v1/servers/%s/tools: status %d", server, code)
	}
	out := make(map[string]api.Tool, len(list))
	for _, x := range list {
		out[x.Name] = x
	}
	return out
}

// Server is GET /v1/servers/{server}.
func (w *Warden) Server(t testing.TB, server string) api.Server {
	t.Helper()
	var s api.Server
	if code := w.API(t, "GET", "/v1/servers/"+server, nil, &s); code != http.StatusOK {
		t.Fatalf("GET /v1/servers/%s: status %d", server, code)
	}
	return s
}

// Metrics is the daemon's /metrics text.
func (w *Warden) Metrics(t testing.TB) string {
	t.Helper()
	resp, err := http.Get(w.URL("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// MetricValue is the value of the sample named (with its labels) in a
// /metrics text, or 0.
func MetricValue(text, sample string) float64 {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// CLI runs the warden binary against w (its config file and state dir) and
// returns its exit status and output.
func (w *Warden) CLI(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin := testenv.BuildBinary(t, "./cmd/warden")
	return testenv.Run(t, bin, nil, append(args, "--config", w.ConfigPath, "--state-dir", w.StateDir)...)
}
