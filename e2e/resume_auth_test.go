package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.etcd.io/bbolt"

	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// binWarden is `warden serve` run from the built binary as a process of
// its own, on a config file and state dir that outlive it, so that it can
// be stopped, killed with -9 and started again.
type binWarden struct {
	t                 *testing.T
	bin               string
	cfgPath, stateDir string
	addr              string
	env               []string // added to the environment of serve and the CLI
	p                 *testenv.Process
	out               strings.Builder // the output of the runs before p
}

func newBinWarden(t *testing.T, servers map[string]any, env ...string) *binWarden {
	t.Helper()
	dir := t.TempDir()
	w := &binWarden{t: t, bin: testenv.BuildBinary(t, "./cmd/warden"), env: env,
		cfgPath: filepath.Join(dir, "config.json"), stateDir: filepath.Join(dir, "state"),
		addr: fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))}
	w.writeConfig(servers)
	return w
}

func (w *binWarden) writeConfig(servers map[string]any) {
	w.t.Helper()
	cfg, err := json.Marshal(map[string]any{"listen": w.addr, "mcpServers": servers})
	if err != nil {
		w.t.Fatal(err)
	}
	wardentest.WriteFileAtomic(w.t, w.cfgPath, cfg, 0o600)
}

func (w *binWarden) start() {
	w.t.Helper()
	cmd := exec.Command(w.bin, "serve", "--config", w.cfgPath, "--state-dir", w.stateDir)
	cmd.Env = append(os.Environ(), w.env...)
	w.p = testenv.StartProcess(w.t, cmd)
	testenv.WaitHTTP(w.t, "http://"+w.addr+"/healthz", 20*time.Second)
}

// stop stops Warden cleanly (SIGTERM): its upstream sessions are kept.
func (w *binWarden) stop() {
	w.t.Helper()
	if err := w.p.Signal(syscall.SIGTERM); err != nil {
		w.t.Fatal(err)
	}
	if err := w.p.Wait(20 * time.Second); err != nil {
		w.t.Fatalf("warden serve: %v\n%s", err, w.p.Output())
	}
}

// kill9 kills Warden with SIGKILL.
func (w *binWarden) kill9() {
	w.t.Helper()
	if err := w.p.Signal(syscall.SIGKILL); err != nil {
		w.t.Fatal(err)
	}
	if err := w.p.Wait(10 * time.Second); err == nil {
		w.t.Fatal("warden exited cleanly after SIGKILL")
	}
}

// output is what the latest run of Warden has written.
func (w *binWarden) output() string { return w.p.Output() }

func (w *binWarden) connect(server string) *mcp.ClientSession {
	w.t.Helper()
	return wardentest.ConnectURL(w.t, "http://"+w.addr+"/mcp/"+server, nil, nil)
}

func (w *binWarden) cli(args ...string) (code int, stdout, stderr string) {
	w.t.Helper()
	return testenv.Run(w.t, w.bin, append(os.Environ(), w.env...), append(args, "--config", w.cfgPath, "--state-dir", w.stateDir)...)
}

// login runs `warden auth login SERVER` and plays the browser.
func (w *binWarden) login(server string) { oauthLogin(w.t, w.bin, w.cfgPath, w.stateDir, server) }

// awaitEcho calls echo until it answers (the server may still be listing
// after a start or a login), and fails the test if it never does.
func awaitEcho(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	var last string
	if !wardentest.Poll(30*time.Second, func() bool {
		last = wardentest.TryCall(cs, fixture.ToolEcho, map[string]any{"text": "hi"})
		return strings.Contains(last, "hi") && !strings.HasPrefix(last, "error")
	}) {
		t.Fatalf("echo never answered; last: %s", last)
	}
}

// resumedUpstream is an HTTP upstream behind either a static bearer header
// or OAuth (the authorization server fixture), for the resume tests.
type resumedUpstream struct {
	f   *fixture.Fixture
	as  *fixture.AuthServer // nil: a static bearer header
	url string
}

func newResumedUpstream(t *testing.T, oauth bool) (*resumedUpstream, map[string]any, []string) {
	u := &resumedUpstream{f: fixture.NewServer(fixture.Options{})}
	if !oauth {
		u.f.HTTP().RequireAuthorization("Bearer " + upstreamToken)
		u.url = u.f.Serve(t)
		return u, map[string]any{"url": u.url, "trusted": true,
			"headers": map[string]string{"Authorization": "Bearer ${env:UPSTREAM_TOKEN}"}}, []string{"UPSTREAM_TOKEN=" + upstreamToken}
	}
	u.as = fixture.NewAuthServer(t)
	up := httptest.NewServer(u.as.Protect(u.f.HTTPHandler()))
	t.Cleanup(up.Close)
	u.url = up.URL + "/mcp"
	return u, map[string]any{"url": u.url, "trusted": true}, nil
}

// The regression of issue 28: after a restart, the upstream no longer knows
// the resumed session and answers its first request 401, as many hosted
// servers do. That is the session's refusal, not the credentials': the
// record is dropped, exactly one fresh initialize is done, the call goes
// through, and the server never shows needs_login or AUTH_REQUIRED (nor is
// a refresh token spent on it). For a static bearer header and for OAuth,
// with the direct HTTP call path and with the SDK's (WARDEN_FASTPATH=off).
func TestResumedSession401ReinitializesOnce(t *testing.T) {
	for _, oauth := range []bool{false, true} {
		for _, fastpath := range []bool{true, false} {
			t.Run(fmt.Sprintf("oauth=%v/fastpath=%v", oauth, fastpath), func(t *testing.T) {
				u, entry, env := newResumedUpstream(t, oauth)
				if !fastpath {
					env = append(env, "WARDEN_FASTPATH=off")
				}
				w := newBinWarden(t, map[string]any{"up": entry}, env...)
				w.start()
				if oauth {
					w.login("up")
				}
				awaitEcho(t, w.connect("up"))
				old := u.f.HTTP().SessionIDs()
				w.stop()

				u.f.HTTP().ForgetSessionsAnswering(http.StatusUnauthorized)
				inits, mark := u.f.Initializes(), len(u.f.HTTP().Requests())
				w.start()
				cs := w.connect("up")
				res := wardentest.CallResult(t, cs, fixture.ToolEcho, map[string]any{"text": "hi"})
				if res.IsError || !strings.Contains(wardentest.ResultText(res), "hi") {
					t.Fatalf("the call after the restart answered isError=%v _meta=%v %q; want the echo", res.IsError, res.Meta, wardentest.ResultText(res))
				}
				reqs := u.f.HTTP().Requests()[mark:]
				if len(reqs) == 0 || !slices.Contains(old, reqs[0].SessionID) || reqs[0].Status != http.StatusUnauthorized {
					t.Fatalf("the first request after the restart was %+v; want one on the resumed session %q answered 401", reqs, old)
				}
				if n := u.f.Initializes() - inits; n != 1 {
					t.Fatalf("%d initializes after the restart; want exactly 1", n)
				}
				if out := w.output(); strings.Contains(out, "needs a login") || strings.Contains(out, "needs_login") {
					t.Fatalf("the resumed session's 401 was taken for a login needed:\n%s", out)
				}
				if oauth {
					if n := u.as.Refreshes(); n != 0 {
						t.Fatalf("%d refreshes; the token was valid, none was needed", n)
					}
					if code, out, _ := w.cli("auth", "status", "up"); code != 0 || !strings.Contains(out, "authorized") || strings.Contains(out, "needs_login") {
						t.Fatalf("auth status: exit %d\n%s", code, out)
					}
				}
			})
		}
	}
}

// When the fresh initialize that replaces a resumed session is itself
// refused 401 by an OAuth server (the grant was revoked while Warden was
// down), a person must log in: calls are refused AUTH_REQUIRED naming
// `warden auth login up`, and after that login calls go through again.
func TestResumedSessionFreshInitializeRefusedNeedsLogin(t *testing.T) {
	for _, fastpath := range []bool{true, false} {
		t.Run(fmt.Sprintf("fastpath=%v", fastpath), func(t *testing.T) {
			u, entry, env := newResumedUpstream(t, true)
			if !fastpath {
				env = append(env, "WARDEN_FASTPATH=off")
			}
			w := newBinWarden(t, map[string]any{"up": entry}, env...)
			w.start()
			w.login("up")
			awaitEcho(t, w.connect("up"))
			w.stop()

			u.f.HTTP().ForgetSessionsAnswering(http.StatusUnauthorized)
			u.as.RevokeAll()
			w.start()
			cs := w.connect("up")
			res := wardentest.CallResult(t, cs, fixture.ToolEcho, map[string]any{"text": "hi"})
			wardentest.WantRefusal(t, res, "AUTH_REQUIRED", "warden auth login up")
			if code, out, _ := w.cli("auth", "status", "up"); code != 0 || !strings.Contains(out, "needs_login") {
				t.Fatalf("auth status: exit %d\n%s", code, out)
			}
			w.login("up") // offers the client registered at the first login again

			awaitEcho(t, cs)
		})
	}
}

// storedAuth reports whether the store in stateDir (of a Warden that is not
// running) holds OAuth tokens for server.
func storedAuth(t *testing.T, stateDir, server string) bool {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(stateDir, "warden.db"), 0o600, &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	held := false
	err = db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte("upstream_auth")); b != nil {
			held = b.Get([]byte(server)) != nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return held
}

// awaitReloads waits until the running Warden has applied n config reloads.
func (w *binWarden) awaitReloads(n int) {
	w.t.Helper()
	wardentest.WaitFor(w.t, 30*time.Second, fmt.Sprintf("%d config reloads", n), func() bool {
		return strings.Count(w.output(), `msg="config reloaded"`) >= n
	})
}

// A server's OAuth tokens live as long as the server is in the config: a
// disabled server keeps them (enabled again, it needs no login), a server
// removed from the config has them revoked at the authorization server and
// dropped from the store at the reload, and added back it needs a login.
func TestOAuthTokensGoWithTheServer(t *testing.T) {
	u, entry, _ := newResumedUpstream(t, true)
	other := fixture.NewServer(fixture.Options{}).Serve(t) // the config never empties
	servers := map[string]any{"hosted": entry, "other": map[string]any{"url": other, "trusted": true}}
	w := newBinWarden(t, servers)
	w.start()
	w.login("hosted")
	awaitEcho(t, w.connect("hosted"))

	disabled := map[string]any{"url": u.url, "trusted": true, "disabled": true}
	w.writeConfig(map[string]any{"hosted": disabled, "other": servers["other"]})
	w.awaitReloads(1)
	w.writeConfig(servers)
	w.awaitReloads(2)
	awaitEcho(t, w.connect("hosted"))
	if n := u.as.Revokes(); n != 0 {
		t.Fatalf("%d revocations after disabling and enabling the server; want 0", n)
	}

	w.writeConfig(map[string]any{"other": servers["other"]})
	w.awaitReloads(3)
	wardentest.WaitFor(t, 30*time.Second, "the removed server's two tokens revoked", func() bool { return u.as.Revokes() == 2 })
	w.stop()
	if storedAuth(t, w.stateDir, "hosted") {
		t.Fatal("the store still holds the OAuth tokens of a server removed from the config")
	}

	w.writeConfig(servers)
	w.start()
	wardentest.WantRefusal(t, wardentest.CallResult(t, w.connect("hosted"), fixture.ToolEcho, map[string]any{"text": "hi"}),
		"AUTH_REQUIRED", "warden auth login hosted")
}
