package e2e

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// The README's team quick start: scripts/team-up.sh brings up PostgreSQL,
// three instances and haproxy; a client reaches Warden through the
// balancer; an operator command works on an instance; Ctrl-C stops it all.
func TestTeamUpScript(t *testing.T) {
	dir, err := os.MkdirTemp("", "team-up-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // as root, PostgreSQL runs as postgres
		t.Fatal(err)
	}
	port := freeRun(t, 4)
	cmd := exec.Command(filepath.Join(testenv.RepoRoot(t), "scripts", "team-up.sh"), dir)
	cmd.Env = append(os.Environ(), "WARDEN_TEAM_PORT="+strconv.Itoa(port))
	p := testenv.StartProcess(t, cmd)
	lb := "http://127.0.0.1:" + strconv.Itoa(port)
	wardentest.WaitFor(t, 120*time.Second, "the team up behind haproxy", func() bool {
		if p.Exited() {
			t.Fatal("the script ended before the team was up")
		}
		resp, err := http.Get(lb + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})

	cs := wardentest.ConnectURL(t, lb+"/mcp", nil, nil)
	if names := wardentest.ToolNames(t, cs); len(names) != 0 {
		t.Fatalf("a team with no servers lists %v", names)
	}
	cs.Close()
	code, out, errOut := testenv.Run(t, filepath.Join(dir, "warden"), nil, "--config", filepath.Join(dir, "config.json"), "--state-dir", filepath.Join(dir, "i1"), "status")
	if code != 0 {
		t.Fatalf("warden status on i1: %d\n%s%s", code, out, errOut)
	}
	for n := 1; n <= 3; n++ {
		if !strings.Contains(out, "127.0.0.1:"+strconv.Itoa(port+n)) {
			t.Errorf("warden status does not list instance %d:\n%s", n, out)
		}
	}

	if err := p.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(60 * time.Second); err != nil && !p.Exited() {
		t.Fatalf("the script did not stop on SIGINT: %v", err)
	}
	for n := range 4 {
		if testenv.Dialable("127.0.0.1:" + strconv.Itoa(port+n)) {
			t.Errorf("port %d still listens after the script stopped", port+n)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pg", "postmaster.pid")); err == nil {
		t.Error("PostgreSQL still runs after the script stopped (postmaster.pid is there)")
	}
}

// freeRun finds n free consecutive loopback ports and returns the first.
func freeRun(t *testing.T, n int) int {
	for range 50 {
		base := testenv.FreePort(t)
		ok := true
		for i := 1; i < n && ok; i++ {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+i))
			if ok = err == nil; ok {
				ln.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}
