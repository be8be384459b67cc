package e2e

import (
	"encoding/json"
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

// raiderHome is a home as the README leaves it (warden installed in
// ~/go/bin), with a shell profile, an SSH key, another Warden's state at
// its default place and a ~/.config.
func raiderHome(t *testing.T, home, warden string) {
	for path, content := range map[string]string{
		".bashrc":                        "# mine\n",
		".ssh/id_rsa":                    "-----BEGIN OPENSSH PRIVATE KEY-----\n",
		".local/state/warden/api-token":  "another-daemons-token\n",
		".config/app/settings.json":      "{}\n",
		".config/google-chrome/Cookies":  "cookies\n",
		".mozilla/firefox/x/logins.json": "{}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, path)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, path), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(home, "go", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyBinary(t, warden, filepath.Join(home, "go", "bin", "warden"))
}

// raidWrites and raidReads are what the raider tries in the home: each
// must fail under the default isolation; the reaper fallback (no
// namespaces) stops the writes and, through Landlock read rules that skip
// the credential stores, the reads.
var (
	raidWrites = []string{"replace_binary", "append_bashrc", "plant_in_home", "rename_config"}
	raidReads  = []string{"read_ssh_key", "read_other_token", "read_chrome_cookies", "read_firefox_logins"}
)

// A hostile quarantined server goes after the operator's home (Warden run
// with HOME set to it): it tries to put a wrapper in place of
// ~/go/bin/warden, append to ~/.bashrc, plant ~/.profile, rename
// ~/.config, and read ~/.ssh/id_rsa, another Warden's api-token at the
// default state path and browser profiles. Under the default isolation
// and the reaper fallback every attempt fails, as root and as an ordinary
// user; with isolation off every one works, which shows the attempts are
// real.
func TestServerCannotTouchTheHome(t *testing.T) {
	raider := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/raider")
	warden := testenv.BuildBinary(t, "./cmd/warden")
	users := []int{-1}
	if os.Geteuid() == 0 {
		users = append(users, nobody)
	}
	for _, iso := range []string{"default", "reaper", "off"} {
		for _, uid := range users {
			t.Run(iso+"/"+map[bool]string{true: "self", false: "nobody"}[uid < 0], func(t *testing.T) {
				dir, bin := t.TempDir(), raider
				if uid >= 0 {
					dir = worldDir(t)
					bin = copyBinary(t, raider, filepath.Join(dir, "raider"))
				}
				home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
				raiderHome(t, home, warden)
				if err := os.Mkdir(work, 0o755); err != nil {
					t.Fatal(err)
				}
				report := filepath.Join(work, "report.json")
				env := []string{"HOME=" + home}
				if iso != "default" {
					env = append(env, "WARDEN_ISOLATION="+iso)
				}
				isoStartAs(t, dir, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{
					"raider": map[string]any{"command": bin, "args": []string{"-home", home, "-report", report}, "cwd": work},
				}, uid, env...)
				var got map[string]isoOutcome
				wardentest.WaitFor(t, 30*time.Second, "the raider's report", func() bool {
					b, err := os.ReadFile(report)
					return err == nil && json.Unmarshal(b, &got) == nil
				})
				for _, a := range append(raidWrites, raidReads...) {
					o, ok := got[a]
					if want := iso == "off"; !ok || o.OK != want {
						t.Errorf("%s: worked=%v (%s), want worked=%v", a, o.OK, o.Detail, want)
					}
				}
				if iso == "off" {
					return
				}
				if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# mine\n" {
					t.Errorf("~/.bashrc changed: %q", b)
				}
			})
		}
	}
}

// A server given "write": [dir, dir/cache] replaces cache by a link to
// another directory and exits; started again, it does not start: Warden
// says which path is a link and why, and nothing is written where the
// link points.
func TestSandboxPathsNeverFollowLinks(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/raider")
	eachUser(t, []string{"default"}, built, func(t *testing.T, _, dir, raider string, uid int) {
		data, other := filepath.Join(dir, "data"), filepath.Join(dir, "other")
		cache := filepath.Join(data, "cache")
		for _, d := range []string{cache, other} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		w := isoStartAs(t, dir, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{
			"raider": map[string]any{"command": raider, "args": []string{"-link", cache, "-to", other, "-report", filepath.Join(data, "report.json")},
				"sandbox": map[string]any{"paths": map[string]any{"read": []string{filepath.Dir(raider)}, "write": []string{data, cache}}}},
		}, uid)
		pwned := filepath.Join(other, "pwned")
		var srv struct{ Connection struct{ Error string } }
		wardentest.WaitFor(t, 60*time.Second, "the server's start to fail, or its write through the link", func() bool {
			w.api("GET", "/v1/servers/raider", &srv)
			_, err := os.Stat(pwned)
			return strings.Contains(srv.Connection.Error, "symbolic link") || err == nil
		})
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("the server wrote through the link it made: %s exists", pwned)
		}
		if !strings.Contains(srv.Connection.Error, cache) {
			t.Errorf("the start failure does not name the path: %q", srv.Connection.Error)
		}
		status := exec.Command(w.bin, "status")
		status.Env = append(os.Environ(), "WARDEN_CONFIG="+w.cfg, "WARDEN_STATE_DIR="+w.state)
		if out, _ := status.CombinedOutput(); !strings.Contains(string(out), "symbolic link") {
			t.Errorf("warden status does not say why the server does not start:\n%s", out)
		}
		if fi, err := os.Lstat(cache); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the server did not make its link (%v): the attack did not happen", err)
		}
	})
}

// A server that needs the config file's directory (it names files there) sees the
// rest of it but never the config, also after the operator saves the
// config the way editors do (a new file renamed over it), which once
// uncovered the new file for servers started before the save.
func TestConfigSavedByRenameStaysHidden(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/fixture-server")
	eachUser(t, []string{"default"}, built, func(t *testing.T, _, dir, fixture string, uid int) {
		cfgDir := filepath.Join(dir, "config")
		if err := os.MkdirAll(cfgDir, 0o700); err != nil {
			t.Fatal(err)
		}
		wardentest.WriteFileAtomic(t, filepath.Join(cfgDir, "notes.txt"), []byte("a sibling\n"), 0o644)
		out := filepath.Join(dir, "out")
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		// Every 50 ms it copies the config, if it can read it, and a
		// sibling into its cwd, beside a heartbeat.
		loop := `while :; do cat ` + cfgDir + `/config.json > c 2>/dev/null && mv c leak; ` +
			`cat ` + cfgDir + `/notes.txt > sibling; touch beat; sleep 0.05; done & exec ` + fixture
		w := isoStartAs(t, dir, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{
			"reader": map[string]any{"command": "sh", "args": []string{"-c", loop}, "cwd": out, "trusted": true},
		}, uid)
		beat := func() time.Time {
			fi, err := os.Stat(filepath.Join(out, "beat"))
			if err != nil {
				return time.Time{}
			}
			return fi.ModTime()
		}
		wardentest.WaitFor(t, 20*time.Second, "the reader's loop", func() bool { return !beat().IsZero() })
		if b, err := os.ReadFile(filepath.Join(out, "sibling")); err != nil || string(b) != "a sibling\n" {
			t.Fatalf("the server does not see the config dir's other entries: %q %v", b, err)
		}
		var before struct {
			Connection struct {
				State string
				Since time.Time
			}
		}
		wardentest.WaitFor(t, 20*time.Second, "the reader ready", func() bool {
			w.api("GET", "/v1/servers/reader", &before)
			return before.Connection.State == "ready"
		})

		b, err := os.ReadFile(w.cfg)
		if err != nil {
			t.Fatal(err)
		}
		wardentest.WriteFileAtomic(t, w.cfg, append(b, '\n'), 0o600) // saved by rename, as editors do
		if uid >= 0 {
			if err := os.Chown(w.cfg, uid, uid); err != nil {
				t.Fatal(err)
			}
		}
		saved := time.Now()
		wardentest.WaitFor(t, 10*time.Second, "the reader's loop to go on after the save", func() bool {
			return beat().After(saved.Add(300 * time.Millisecond))
		})
		if leak, err := os.ReadFile(filepath.Join(out, "leak")); err == nil {
			t.Fatalf("the server read the config saved by rename: %d bytes", len(leak))
		}
		after := before
		w.api("GET", "/v1/servers/reader", &after)
		if after.Connection.State != "ready" || !after.Connection.Since.Equal(before.Connection.Since) {
			t.Fatalf("the server was started again (%v, then %v): it must be the one started before the save", before.Connection.Since, after.Connection.Since)
		}
	})
}

// Two real stdio servers, where b's envFile lies in a's cwd: a, which
// appends to that file as it starts, runs; b is not loaded, and warden
// status names why (both servers, the path, the fix), so a cannot choose
// b's environment.
func TestServerCannotChangeAnothersEnvFile(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/fixture-server")
	eachUser(t, []string{"default"}, built, func(t *testing.T, _, dir, fixture string, uid int) {
		aCwd := filepath.Join(dir, "a")
		if err := os.MkdirAll(aCwd, 0o755); err != nil {
			t.Fatal(err)
		}
		envFile := filepath.Join(aCwd, ".env")
		wardentest.WriteFileAtomic(t, envFile, []byte("FIXTURE_NOTE=b's own\n"), 0o644)
		w := isoStartAs(t, dir, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{
			"a": map[string]any{"command": "sh", "args": []string{"-c", "echo INJECTED=by-a >> .env; exec " + fixture}, "cwd": aCwd, "trusted": true},
			"b": map[string]any{"command": fixture, "envFile": envFile, "trusted": true},
		}, uid)
		wardentest.WaitFor(t, 30*time.Second, "a ready", func() bool {
			var s struct{ Connection struct{ State string } }
			w.api("GET", "/v1/servers/a", &s)
			return s.Connection.State == "ready"
		})
		if b, err := os.ReadFile(envFile); err != nil || !strings.Contains(string(b), "INJECTED") {
			t.Fatalf("a did not write b's envFile (%v): the attack did not happen", err)
		}
		status := exec.Command(w.bin, "status")
		status.Env = append(os.Environ(), "WARDEN_CONFIG="+w.cfg, "WARDEN_STATE_DIR="+w.state)
		out, _ := status.CombinedOutput()
		for _, want := range []string{"mcpServers.b.envFile", envFile, `server "a"`, "not loaded", "move it out of " + aCwd} {
			if !strings.Contains(string(out), want) {
				t.Errorf("warden status does not say %q:\n%s", want, out)
			}
		}
	})
}

// A server may write its cwd, where its envFile is: it replaces the file
// by a link to a file hidden from it, another server's env file here. At
// the next load (SIGHUP) Warden must not read that file into its
// environment: the server is not loaded, and warden status says why.
func TestServerCannotLinkItsEnvFileOut(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/fixture-server")
	eachUser(t, []string{"default"}, built, func(t *testing.T, _, dir, fixture string, uid int) {
		aEnv, bCwd := filepath.Join(dir, "secrets", "a.env"), filepath.Join(dir, "b")
		bEnv := filepath.Join(bCwd, ".env")
		for _, d := range []string{filepath.Dir(aEnv), bCwd} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		wardentest.WriteFileAtomic(t, aEnv, []byte("A_TOKEN=secret-of-a\n"), 0o600)
		wardentest.WriteFileAtomic(t, bEnv, []byte("B_NOTE=b's own\n"), 0o600)
		w := isoStartAs(t, dir, "127.0.0.1:"+strconv.Itoa(testenv.FreePort(t)), map[string]any{
			"a": map[string]any{"command": fixture, "envFile": aEnv, "trusted": true},
			"b": map[string]any{"command": "sh", "args": []string{"-c", "ln -s " + aEnv + " .env.new && mv -f .env.new .env; exec " + fixture},
				"cwd": bCwd, "envFile": bEnv, "trusted": true},
		}, uid)
		wardentest.WaitFor(t, 30*time.Second, "b ready", func() bool {
			var s struct{ Connection struct{ State string } }
			w.api("GET", "/v1/servers/b", &s)
			return s.Connection.State == "ready"
		})
		if target, err := os.Readlink(bEnv); err != nil || target != aEnv {
			t.Fatalf("b did not link its envFile to a's (%q, %v): the attack did not happen", target, err)
		}
		if err := w.proc.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		var out []byte
		wardentest.WaitFor(t, 20*time.Second, "b refused after the reload", func() bool {
			status := exec.Command(w.bin, "status")
			status.Env = append(os.Environ(), "WARDEN_CONFIG="+w.cfg, "WARDEN_STATE_DIR="+w.state)
			out, _ = status.CombinedOutput()
			return strings.Contains(string(out), "mcpServers.b.envFile")
		})
		for _, want := range []string{bEnv, "a link that leads out of it", aEnv, `server "b" is not loaded`, "replace the link"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("warden status does not say %q:\n%s", want, out)
			}
		}
		var b struct {
			ConfigError string `json:"config_error"`
			Connection  struct{ State string }
		}
		w.api("GET", "/v1/servers/b", &b)
		if b.Connection.State != "stopped" || !strings.Contains(b.ConfigError, "a link that leads out of it") {
			t.Errorf("b after the reload: %+v, want stopped with the config error", b)
		}
	})
}
