package e2e

import (
	"cmp"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenmcp/warden/internal/testenv"
	"github.com/wardenmcp/warden/internal/wardentest"
)

// The operator's CLI goes to the daemon that owns the state dir and sends
// it no secret; nothing a server writes decides where it goes. Attack: a
// quarantined server whose cwd is the home directory the config file sits
// in (so it may write beside the config, as with --config ~/.claude.json)
// plants the record an earlier CLI followed (".claude.json.daemon") naming
// a listener of its own and the real state dir, and writes down every
// Authorization header it is sent. The operator then runs warden status:
// it must show the real daemon and hand the server nothing. As root and as
// an ordinary user.
func TestCLIFollowsNoPlantedRecord(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/fixture/cmd/intruder")
	eachUser(t, []string{"default"}, built, func(t *testing.T, _, dir, intruder string, uid int) {
		home := filepath.Join(dir, "home")
		if err := os.Mkdir(home, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg, caught := filepath.Join(home, ".claude.json"), filepath.Join(home, "caught")
		listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
		w := isoStartConfig(t, dir, cfg, listen, map[string]any{
			"intruder": map[string]any{"command": intruder, "cwd": home,
				"args": []string{"-state", filepath.Join(dir, "state"), "-config", cfg, "-plant-record", caught}},
		}, uid, "HOME="+home)
		planted := filepath.Join(home, "..claude.json.daemon")
		// (A daemon of an earlier version wrote its own record there before
		// it answered /healthz; the intruder writes over it.)
		wardentest.WaitFor(t, 20*time.Second, "the intruder to plant its record", func() bool {
			b, err := os.ReadFile(planted)
			return err == nil && !strings.Contains(string(b), listen)
		})
		cli := exec.Command(w.proc.Cmd.Path, "--config", cfg, "status")
		cli.Env = append(os.Environ(), "HOME="+home, "WARDEN_STATE_DIR="+w.state, "WARDEN_CONFIG=")
		if uid >= 0 {
			cli.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		}
		out, err := cli.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "at http://"+listen) || !strings.Contains(string(out), "intruder") {
			t.Errorf("warden status did not show the real daemon: %v\n%s", err, out)
		}
		if b, err := os.ReadFile(caught); err == nil {
			t.Fatalf("the CLI sent the server %q", b)
		}
		var srv struct{ Quarantined bool }
		w.api("GET", "/v1/servers/intruder", &srv)
		if !srv.Quarantined {
			t.Fatal("the intruder is no longer quarantined")
		}
	})
}

// A server of one Warden cannot use another Warden's operator API, even
// with that Warden's token: it reads B's api-token (B's state dir is not
// A's to hide) and asks B to approve B's quarantined server. B refuses it:
// the process holding the connection is in another Warden's namespaces.
// As root and as an ordinary user.
func TestServerCannotUseAnotherWardensAPI(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/fixture/cmd/intruder")
	fixture := testenv.BuildBinary(t, fixturePkg)
	eachUser(t, []string{"default"}, built, func(t *testing.T, _, dir, intruder string, uid int) {
		dirB, dirA := filepath.Join(dir, "b"), filepath.Join(dir, "a")
		for _, d := range []string{dirA, dirB} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			if uid >= 0 {
				os.Chown(d, uid, uid)
			}
		}
		fx := fixture
		if uid >= 0 {
			fx = copyBinary(t, fixture, filepath.Join(dir, "fixture"))
		}
		b := isoStartAs(t, dirB, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{"s": map[string]any{"command": fx}}, uid)
		report := filepath.Join(dirA, "report.json")
		pidFile := filepath.Join(dirA, "go")
		isoStartAs(t, dirA, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{
			"intruder": map[string]any{"command": intruder, "cwd": dirA, "args": []string{"-name", "intruder", "-report", report,
				"-warden-pid-file", pidFile, "-other-api", "http://" + b.listen, "-other-state", b.state, "-other-server", "s"}},
		}, uid)
		wardentest.WriteFileAtomic(t, pidFile, []byte("0"), 0o644)
		if uid >= 0 {
			os.Chown(pidFile, uid, uid)
		}
		var got map[string]isoOutcome
		wardentest.WaitFor(t, 30*time.Second, "the intruder's report", func() bool {
			b, err := os.ReadFile(report)
			return err == nil && json.Unmarshal(b, &got) == nil
		})
		o, ok := got["other_warden_api"]
		if !ok || o.OK {
			t.Fatalf("the server of one Warden used another's API: %+v (report %v)", o, got)
		}
		t.Logf("refused as it should be: %s", cmp.Or(o.Detail, "-"))
		var srv struct{ Quarantined bool }
		b.api("GET", "/v1/servers/s", &srv)
		if !srv.Quarantined {
			t.Fatal("B's server was approved by A's server")
		}
	})
}
