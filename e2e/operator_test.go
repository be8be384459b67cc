package e2e

import (
	"cmp"
	"net"
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

// The operator's CLI goes to the daemon that owns the state dir and sends
// it no secret; nothing a server writes decides where it goes. Attack: a
// quarantined server plants, beside the config file (a ~/.claude.json in
// the home it runs in), the record an earlier CLI followed
// (".claude.json.daemon"), naming a listener of its own and the real state
// dir, and notes every Authorization header it is sent. Confinement keeps
// it from writing there now; the test plants the record for it, as a
// server given that directory to write would. The operator then runs
// warden status: it must show the real daemon and hand the server nothing.
// As root and as an ordinary user.
func TestCLIFollowsNoPlantedRecord(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/intruder")
	eachUser(t, []string{"default"}, built, func(t *testing.T, _, dir, intruder string, uid int) {
		home := filepath.Join(dir, "home")
		if err := os.Mkdir(home, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(home, ".claude.json")
		listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
		w := isoStartConfig(t, dir, cfg, listen, map[string]any{
			"intruder": map[string]any{"command": intruder, "cwd": home,
				"args": []string{"-state", filepath.Join(dir, "state"), "-config", cfg, "-plant-record"}},
		}, uid, "HOME="+home)
		own := filepath.Join(w.state, "servers", "intruder", "tmp") // the intruder's TMPDIR
		var rec []byte
		wardentest.WaitFor(t, 20*time.Second, "the intruder's record", func() bool {
			b, err := os.ReadFile(filepath.Join(own, "record.json"))
			rec = b
			return err == nil && len(b) > 0
		})
		// (A daemon of an earlier version wrote its own record there before
		// it answered /healthz; the intruder writes over it, and so does this.)
		planted := filepath.Join(home, "..claude.json.daemon")
		wardentest.WriteFileAtomic(t, planted, rec, 0o644)
		cli := exec.Command(w.proc.Cmd.Path, "--config", cfg, "status")
		cli.Env = append(os.Environ(), "HOME="+home, "WARDEN_STATE_DIR="+w.state, "WARDEN_CONFIG=")
		if uid >= 0 {
			cli.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		}
		out, err := cli.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "at http://"+listen) || !strings.Contains(string(out), "intruder") {
			t.Errorf("warden status did not show the real daemon: %v\n%s", err, out)
		}
		if b, err := os.ReadFile(filepath.Join(own, "caught")); err == nil {
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
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/intruder")
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
		workA := filepath.Join(dirA, "work") // the intruder's cwd, beside A's state dir
		if err := os.Mkdir(workA, 0o755); err != nil {
			t.Fatal(err)
		}
		report := filepath.Join(workA, "report.json")
		pidFile := filepath.Join(workA, "go")
		isoStartAs(t, dirA, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{
			"intruder": map[string]any{"command": intruder, "cwd": workA, "args": []string{"-name", "intruder", "-report", report,
				"-warden-pid-file", pidFile, "-other-api", "http://" + b.listen, "-other-state", b.state, "-other-server", "s"}},
		}, uid)
		wardentest.WriteFileAtomic(t, pidFile, []byte("0"), 0o644)
		if uid >= 0 {
			os.Chown(pidFile, uid, uid)
		}
		got := isoReport(t, report)
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

// A server cannot reach the user's own services, which would act for it
// outside its sandbox (systemd-run --user over the session bus, an X
// server): a socket in the user's runtime dir and an abstract socket both
// refuse it. With isolation off both connect, which shows the attempts are
// real. As root and as an ordinary user.
func TestServerCannotReachUserServices(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/intruder")
	eachUser(t, []string{"default", "off"}, built, func(t *testing.T, mode, dir, intruder string, uid int) {
		runtime, work := filepath.Join(dir, "run"), filepath.Join(dir, "work")
		for _, d := range []string{runtime, work} {
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		bus, err := net.Listen("unix", filepath.Join(runtime, "bus"))
		if err != nil {
			t.Fatal(err)
		}
		defer bus.Close()
		os.Chmod(filepath.Join(runtime, "bus"), 0o666)
		abstract := "warden-test-" + strconv.Itoa(os.Getpid()) + "-" + mode
		x11, err := net.Listen("unix", "@"+abstract)
		if err != nil {
			t.Fatal(err)
		}
		defer x11.Close()
		report, pidFile := filepath.Join(work, "report.json"), filepath.Join(work, "go")
		env := []string{"XDG_RUNTIME_DIR=" + runtime}
		if mode == "off" {
			env = append(env, "WARDEN_ISOLATION=off")
		}
		isoStartAs(t, dir, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{
			"intruder": map[string]any{"command": intruder, "cwd": work, "env": map[string]any{"BUS": filepath.Join(runtime, "bus")},
				"args": []string{"-report", report, "-warden-pid-file", pidFile, "-runtime-socket", "$BUS", "-abstract-socket", abstract}},
		}, uid, env...)
		wardentest.WriteFileAtomic(t, pidFile, []byte("0"), 0o644)
		got := isoReport(t, report)
		for _, a := range []string{"user_runtime_socket", "user_abstract_socket"} {
			if o, ok := got[a]; !ok || o.OK != (mode == "off") {
				t.Errorf("%s: %+v (present %v), want worked=%v", a, o, ok, mode == "off")
			}
		}
	})
}
