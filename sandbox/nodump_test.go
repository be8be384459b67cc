package sandbox

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain plays a child the environment names, else runs the tests and
// fails when they leave a goroutine running.
func TestMain(m *testing.M) {
	if path := os.Getenv("SANDBOX_TEST_DIAL"); path != "" {
		// A child that connects to a unix socket and holds it.
		if _, err := net.Dial("unix", path); err != nil {
			os.Exit(3)
		}
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	if os.Getenv("SANDBOX_TEST_SLEEPER") != "" {
		// A stand-in for Warden: protect itself or not, say so, and wait.
		if os.Getenv("SANDBOX_TEST_SLEEPER") == "protect" {
			if err := ProtectSelf(); err != nil {
				os.Exit(3)
			}
		}
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// A process of the same user can read Warden's environment (and memory)
// unless Warden made itself non-dumpable. Both run as the unprivileged
// user nobody, which needs root to arrange.
func TestProtectSelf(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root, to run two processes as the same unprivileged user")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "sandbox-nodump-") // not under t.TempDir's private parent
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sleeper")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	nobody := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	for _, tc := range []struct {
		mode     string
		readable bool
	}{{"protect", false}, {"plain", true}} {
		sleeper := exec.Command(bin)
		sleeper.Env = []string{"SANDBOX_TEST_SLEEPER=" + tc.mode, "SECRET_IN_ENV=x"}
		sleeper.SysProcAttr = nobody
		out, err := sleeper.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := sleeper.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("%s: sleeper said %q, %v", tc.mode, line, err)
		}
		reader := exec.Command("cat", "/proc/"+strconv.Itoa(sleeper.Process.Pid)+"/environ")
		reader.SysProcAttr = nobody
		got, err := reader.Output()
		sleeper.Process.Kill()
		sleeper.Wait()
		io.Copy(io.Discard, out)
		if readable := err == nil && len(got) > 0; readable != tc.readable {
			t.Errorf("%s: environ readable by the same user = %v (%v), want %v", tc.mode, readable, err, tc.readable)
		}
	}
}
