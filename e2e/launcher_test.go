package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/internal/launcher"
	"github.com/wardenmcp/warden/internal/testenv"
)

// TestLauncherStopsBeforeWardensInit: the warden binary started as a
// server's launcher does its work from package launcher's init, so it never
// initializes what only the rest of Warden needs (main, the MCP surface,
// the operator API, and the SDK, Prometheus and protobuf, whose inits run
// early unless the launcher imports nothing that comes late in Go's init
// order): every stdio server's start pays for the launcher.
func TestLauncherStopsBeforeWardensInit(t *testing.T) {
	warden := testenv.BuildBinary(t, "./cmd/warden")
	r, w, err := os.Pipe() // the lifeline, as Warden passes it
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cmd := exec.Command(warden)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GODEBUG=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, launcher.Env+"="+launcher.Plan{Probe: true}.Encode(), "GODEBUG=inittrace=1")
	cmd.ExtraFiles = []*os.File{r}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("launcher probe: %v\n%s", err, out)
	}
	trace := string(out)
	if !strings.Contains(trace, "init runtime @") {
		t.Fatalf("no init trace in the launcher's output:\n%s", trace)
	}
	for _, pkg := range []string{"main", "github.com/wardenmcp/warden/surface", "github.com/wardenmcp/warden/api",
		"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/google/jsonschema-go/jsonschema", "encoding/gob",
		"github.com/prometheus/procfs", "google.golang.org/protobuf/internal/detrand", "encoding/json"} {
		if strings.Contains(trace, "init "+pkg+" @") {
			t.Errorf("the launcher initialized %s", pkg)
		}
	}
}
