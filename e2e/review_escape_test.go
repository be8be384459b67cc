package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/wardenmcp/warden/api"
	"github.com/wardenmcp/warden/internal/testing/fixture"
	"github.com/wardenmcp/warden/internal/testing/testenv"
	"github.com/wardenmcp/warden/internal/testing/wardentest"
)

// A server whose tool names carry terminal escapes (one clears the screen
// and draws a fake "approve 1 tool(s): safe_read" prompt), a bidi override
// and a zero-width space cannot fool the person reviewing it: the real
// `warden review`, `review approve --all`, `servers approve`, `tools`,
// `servers` and `logs` write no raw control, bidi or invisible character;
// the three names are held as invalid with the reason; answering "y"
// approves only the two tools the prompt truthfully showed; and none of the
// three is listed to or callable by an agent. As the test's user and, when
// the tests run as root, as an ordinary one.
func TestReviewEscapesServerStrings(t *testing.T) {
	built := testenv.BuildBinary(t, "./internal/testing/fixture/cmd/masquerade")
	eachUser(t, []string{"default"}, built, func(t *testing.T, _, dir, masq string, uid int) {
		listen := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
		w := isoStartAs(t, dir, listen, map[string]any{"m": map[string]any{"command": masq}}, uid)
		cli := func(stdin string, args ...string) (int, string) {
			t.Helper()
			code, stdout, stderr := cliAs(t, w, dir, uid, stdin, args...)
			if slices.Contains(args, "--json") { // for programs: the data as it is
				return code, stdout
			}
			if bad := rawControls(stdout + stderr); len(bad) > 0 {
				t.Errorf("warden %s wrote raw %s to the terminal:\n%s%s", strings.Join(args, " "), strings.Join(bad, ", "), stdout, stderr)
			}
			return code, stdout + stderr
		}
		invalid := []string{fixture.MasqFakePrompt, fixture.MasqBidi, fixture.MasqZeroWide}

		var tools map[string]api.Tool
		wardentest.WaitFor(t, 20*time.Second, "the masquerade server's five tools", func() bool {
			tools = toolsOf(t, cli, "m")
			return len(tools) == 5
		})

		code, out := cli("", "review", "m")
		if code != 3 || !strings.Contains(out, fixture.MasqSafe) || !strings.Contains(out, fixture.MasqDestroy) ||
			!strings.Contains(out, "3 tool(s) held as invalid") || !strings.Contains(out, `zz\x1b[2J\x1b[H`) ||
			!strings.Contains(out, `\u202edaer_efas`) || !strings.Contains(out, `safe\u200b_read`) || !strings.Contains(out, "U+001B") {
			t.Errorf("review m: exit %d, want 3, the two honest tools and the three invalid ones escaped, with why:\n%s", code, out)
		}
		for _, args := range [][]string{{"review", "m", "--diff"}, {"tools", "m"}, {"servers"}, {"status"}, {"logs", "m"}} {
			cli("", args...)
		}
		if _, out := cli("", "logs", "m"); !strings.Contains(out, `started\x1b[2J\x1b[H\u202eno problems here\x9b31m`) {
			t.Errorf("logs m: the server's log line is not there, escaped:\n%s", out)
		}

		// The plan shows exactly the two valid pending tools; "y" approves them.
		code, out = cli("y\n", "review", "approve", "m", "--all")
		plan, _, _ := strings.Cut(out, "Approve ")
		if code != 0 || !strings.Contains(plan, "about to approve 2 tool(s) of m:") || !strings.Contains(plan, fixture.MasqSafe) ||
			!strings.Contains(plan, fixture.MasqDestroy) || !strings.Contains(plan, "held as invalid") {
			t.Errorf("review approve m --all: exit %d, want the plan of safe_read and delete_everything and the invalid ones named:\n%s", code, out)
		}
		code, out = cli("y\n", "servers", "approve", "m")
		if code != 0 || !strings.Contains(out, "admitted m") {
			t.Errorf("servers approve m: exit %d:\n%s", code, out)
		}
		tools = toolsOf(t, cli, "m")
		for _, name := range []string{fixture.MasqSafe, fixture.MasqDestroy} {
			if tools[name].Status != "approved" {
				t.Errorf("%s: %s, want approved", name, tools[name].Status)
			}
		}
		for _, name := range invalid {
			if tl := tools[name]; tl.Status != "invalid" || !strings.Contains(tl.Invalid, "MCP tool names") || tl.ApprovedHash != "" {
				t.Errorf("%q: status %s (%q), approved %q; want invalid with the reason, never approved", name, tl.Status, tl.Invalid, tl.ApprovedHash)
			}
		}
		// Naming one does not approve it either, and says why.
		if code, out := cli("", "review", "approve", "m", fixture.MasqBidi, "--yes"); code != 1 || !strings.Contains(out, "cannot be approved") {
			t.Errorf("review approve m <bidi name>: exit %d, want 1 saying it cannot be approved:\n%s", code, out)
		}

		// The review page shows them escaped as well, and says why they are held.
		_, out = cli("", "ui", "--no-browser")
		link := out[strings.Index(out, "http://"):]
		link = strings.Fields(link)[0]
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar}
		for _, page := range []string{link, "http://" + listen + "/ui/", "http://" + listen + "/ui/servers/m", "http://" + listen + "/ui/servers/m/tools/" + url.PathEscape(fixture.MasqFakePrompt)} {
			text := pageText(t, hc, page)
			if bad := rawControls(text); len(bad) > 0 {
				t.Errorf("%s shows raw %s:\n%s", page, strings.Join(bad, ", "), text)
			}
			if strings.HasSuffix(page, "/ui/servers/m") && (!strings.Contains(text, `zz\x1b[2J\x1b[H`) || !strings.Contains(text, "never listed or callable")) {
				t.Errorf("the server page does not show the invalid names escaped, with why:\n%s", text)
			}
			if strings.HasSuffix(page, "/ui/") && !strings.Contains(text, "3 invalid") {
				t.Errorf("the overview does not count the invalid tools:\n%s", text)
			}
		}

		// Agents see and run only the two approved tools.
		for _, path := range []string{"/mcp/m", "/mcp"} {
			cs := wardentest.ConnectURL(t, "http://"+listen+path, nil, nil)
			listed := wardentest.SortedToolNames(t, cs)
			want := []string{fixture.MasqDestroy, fixture.MasqSafe}
			if path == "/mcp" {
				want = []string{"m__" + fixture.MasqDestroy, "m__" + fixture.MasqSafe}
			}
			if !slices.Equal(listed, want) {
				t.Errorf("%s lists %q, want %q", path, listed, want)
			}
		}
		cs := wardentest.ConnectURL(t, "http://"+listen+"/mcp/m", nil, nil)
		for _, name := range invalid {
			if got := wardentest.TryCall(cs, name, map[string]any{}); !strings.HasPrefix(got, "error") || strings.Contains(got, "ran ") {
				t.Errorf("calling %q: %q, want it refused without reaching the server", name, got)
			}
		}
		if got := wardentest.TryCall(cs, fixture.MasqSafe, map[string]any{}); got != "ran "+fixture.MasqSafe {
			t.Errorf("calling safe_read: %q", got)
		}
	})
}

// pageText gets a page and returns its text: what is between its tags
// (attributes, which are not shown, left out).
func pageText(t *testing.T, hc *http.Client, page string) string {
	t.Helper()
	resp, err := hc.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", page, resp.StatusCode, b)
	}
	return html.UnescapeString(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(string(b), " "))
}

// cliAs runs the warden binary of w as user uid (-1: the test's) with the
// config and state dir the daemon was started with, stdin as its input, and
// returns its exit status and what it wrote on stdout and stderr.
func cliAs(t *testing.T, w *isoWarden, home string, uid int, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(w.proc.Cmd.Path, args...)
	cmd.Env = append(os.Environ(), "WARDEN_CONFIG="+w.cfg, "WARDEN_STATE_DIR="+w.state, "HOME="+home)
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	cmd.Stdin = strings.NewReader(stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("warden %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), o.String(), e.String()
}

// toolsOf reads a server's tools through `warden tools SERVER --json`.
func toolsOf(t *testing.T, cli func(string, ...string) (int, string), server string) map[string]api.Tool {
	t.Helper()
	_, out := cli("", "tools", server, "--json")
	var list []api.Tool
	_ = json.Unmarshal([]byte(out), &list)
	m := map[string]api.Tool{}
	for _, tl := range list {
		m[tl.Name] = tl
	}
	return m
}

// rawControls lists the characters in s that a terminal would act on or not
// show: C0 controls but the line break, DEL, C1 controls, format characters
// (bidi controls, zero-width ones) and bytes that are not UTF-8.
func rawControls(s string) []string {
	var bad []string
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			bad = append(bad, fmt.Sprintf("byte 0x%02x", s[i]))
		case r < 0x20 && r != '\n', r >= 0x7F && r < 0xA0, unicode.Is(unicode.Cf, r):
			bad = append(bad, fmt.Sprintf("%U", r))
		}
	}
	return bad
}
