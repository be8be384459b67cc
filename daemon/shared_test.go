package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/daemon"
	"github.com/wardenmcp/warden/internal/testing/pgtest"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// Two instances on one PostgreSQL store: each lists both (status and
// GET /v1/instances), labels its metrics with its name, and one that stops
// cleanly leaves the list.
func TestInstancesSharingAStore(t *testing.T) {
	url := pgtest.Start(t, pgtest.Options{}).NewDatabase(t)
	dir := t.TempDir()
	var ws []*wardentest.Warden
	for _, name := range []string{"one", "two"} {
		cfg := filepath.Join(dir, name+".json")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"store": %q, "storeKey": "0123456789abcdef0123"}`, url), 0o600); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, wardentest.StartWith(t, cfg, filepath.Join(dir, name), func(o *daemon.Options) { o.Instance = name }))
	}
	var st api.Status
	ws[0].API(t, "GET", "/v1/status", nil, &st)
	if len(st.Instances) != 2 || st.Instances[0].ID != "one" || st.Instances[1].ID != "two" || st.Instances[1].Listen != ws[1].Addr {
		t.Fatalf("status lists %+v; want one and two", st.Instances)
	}

	resp, err := http.Get("http://" + ws[1].Addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `go_goroutines{warden_instance="two"}`) {
		t.Fatalf("two's metrics lack its instance label:\n%.2000s", b)
	}

	ws[1].Stop()
	var list []struct{ ID string }
	ws[0].API(t, "GET", "/v1/instances", nil, &list)
	if len(list) != 1 || list[0].ID != "one" {
		t.Fatalf("after two stopped: %+v; want one alone", list)
	}
}
