package e2e

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/wardenmcp/warden/internal/launcher"
	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// TestLauncherStopsBeforeWardensInit: the warden binary started as the
// launcher of stdio servers does its work from package launcher's init, so
// it never initializes what only the rest of Warden needs (main, the MCP
// surface, the operator API, and the SDK, Prometheus and protobuf, whose
// inits run early unless the launcher imports nothing that comes late in
// Go's init order): the launcher stays small beside Warden.
func TestLauncherStopsBeforeWardensInit(t *testing.T) {
	warden := testenv.BuildBinary(t, "./cmd/warden")
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	theirs := os.NewFile(uintptr(pair[1]), "control")
	defer theirs.Close()
	// Closed at once: the launcher sets up, finds Warden gone, and exits.
	syscall.Close(pair[0])
	cmd := exec.Command(warden)
	cmd.Env = []string{launcher.Env + "=" + launcher.Plan{}.Encode(), "GODEBUG=inittrace=1"}
	cmd.ExtraFiles = []*os.File{theirs}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("launcher: %v\n%s", err, out)
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
