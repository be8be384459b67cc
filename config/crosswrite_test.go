package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/wardenmcp/warden/internal/testing/testenv"
)

// A stdio server whose envFile, command or cwd lies where another may
// write (its cwd, its sandbox write paths, its own dir in the state dir)
// is left out, with a message naming both servers, the path and the fix;
// the others load. Its own places are its own business.
func TestRefuseCrossWrites(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	testenv.WriteFiles(t, dir, map[string]string{
		"a/.env": "K=1\n", "out/.env": "K=2\n", "state/servers/a/.env": "K=3\n", "b/.env": "K=4\n", "c/.env": "K=5\n",
	})
	for _, tc := range []struct {
		name, b, field, where string
	}{
		{"envFile in a's cwd", `"command": "y", "envFile": %q`, "envFile", "a"},
		{"envFile in a's write path", `"command": "y", "envFile": %q`, "envFile", "out"},
		{"envFile in a's own dir", `"command": "y", "envFile": %q`, "envFile", "state/servers/a"},
		{"absolute command in a's cwd", `"command": %q`, "command", "a"},
		{"cwd in a's write path", `"command": "y", "cwd": %q`, "cwd", "out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.where, ".env")
			if tc.field == "cwd" {
				path = filepath.Join(dir, tc.where, "b")
			}
			file := fmt.Sprintf(`{"mcpServers": {
  "a": {"command": "x", "cwd": %q, "sandbox": {"paths": {"write": [%q]}}},
  "b": {`+tc.b+`},
  "c": {"command": "z", "cwd": %q, "envFile": %q},
  "remote": {"url": "https://example.test/mcp"}}}`,
				filepath.Join(dir, "a"), filepath.Join(dir, "out"), path, filepath.Join(dir, "c"), filepath.Join(dir, "c/.env"))
			cfg, err := ParseAll(filepath.Join(dir, "config.json"), []byte(file), env())
			if err != nil {
				t.Fatal(err)
			}
			cfg.RefuseCrossWrites(state)
			if got := slices.Sorted(func(yield func(string) bool) {
				for n := range cfg.Servers {
					yield(n)
				}
			}); !slices.Equal(got, []string{"a", "c", "remote"}) {
				t.Fatalf("loaded %q, want a, c and remote (broken: %v)", got, cfg.Broken)
			}
			e := cfg.Broken["b"]
			if e == nil {
				t.Fatal("b is not among the broken entries")
			}
			msg := e.Error()
			for _, want := range []string{"mcpServers.b." + tc.field, path, filepath.Join(dir, tc.where), `server "a"`, `server "b"`, "move it out of"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
		})
	}
}

// A relative command is taken from the server's cwd, and one in another
// server's place is refused; a command found through PATH is not a path
// here. Two servers that share a cwd may each change the other's: both
// are refused.
func TestRefuseCrossWritesRelative(t *testing.T) {
	dir := t.TempDir()
	file := fmt.Sprintf(`{"mcpServers": {
  "a": {"command": "x", "cwd": %q},
  "b": {"command": "../a/server", "cwd": %q},
  "c": {"command": "npx", "cwd": %q},
  "d": {"command": "x", "cwd": %q}, "e": {"command": "x", "cwd": %q}}}`,
		filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c"), filepath.Join(dir, "de"), filepath.Join(dir, "de"))
	cfg, err := ParseAll(filepath.Join(dir, "config.json"), []byte(file), env())
	if err != nil {
		t.Fatal(err)
	}
	cfg.RefuseCrossWrites("")
	if cfg.Servers["a"] == nil || cfg.Servers["c"] == nil {
		t.Errorf("a or c was refused: %v", cfg.Broken)
	}
	if e := cfg.Broken["b"]; e == nil || e.Field != "mcpServers.b.command" || !strings.Contains(e.Problem, filepath.Join(dir, "a", "server")) {
		t.Errorf("b: %v, want its command refused", e)
	}
	for _, n := range []string{"d", "e"} {
		if e := cfg.Broken[n]; e == nil || e.Field != "mcpServers."+n+".cwd" {
			t.Errorf("%s: %v, want its cwd refused", n, e)
		}
	}
}

// A command found through PATH is refused when a PATH directory searched
// before or where it is found lies where another server may write: the
// PATH of its "env", or else Warden's. Directories after the one that
// holds it are not searched.
func TestRefuseCrossWritesPath(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	testenv.WriteFiles(t, dir, map[string]string{"safe/tool": "#!/bin/sh\n", "a/bin/.keep": ""})
	if err := os.Chmod(filepath.Join(dir, "safe/tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	abin, out, own, safe := filepath.Join(dir, "a/bin"), filepath.Join(dir, "out"), filepath.Join(state, "servers/a/bin"), filepath.Join(dir, "safe")
	for _, tc := range []struct {
		name, envPath, wardenPath, refused string
	}{
		{"env PATH dir in a's cwd", abin + ":/usr/bin", "/usr/bin", abin},
		{"earlier dir shadows where it is found", out + ":" + safe, "/usr/bin", out},
		{"a later dir: what the command runs is searched for there too", safe + ":" + abin, "/usr/bin", abin},
		{"Warden's PATH dir in a's own dir", "", "/usr/bin:" + own, own},
		{"env PATH wins over Warden's", safe, abin, ""},
		{"relative dir from b's cwd", "../a/bin", "/usr/bin", abin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.wardenPath)
			env := ""
			if tc.envPath != "" {
				env = fmt.Sprintf(`, "env": {"PATH": %q}`, tc.envPath)
			}
			file := fmt.Sprintf(`{"mcpServers": {
  "a": {"command": "/bin/x", "cwd": %q, "sandbox": {"paths": {"write": [%q]}}},
  "b": {"command": "tool", "cwd": %q`+env+`}}}`, filepath.Join(dir, "a"), out, filepath.Join(dir, "b"))
			cfg, err := ParseAll(filepath.Join(dir, "config.json"), []byte(file), nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg.RefuseCrossWrites(state)
			e := cfg.Broken["b"]
			if tc.refused == "" {
				if e != nil {
					t.Fatalf("b refused: %v", e)
				}
				return
			}
			if e == nil {
				t.Fatal("b is not among the broken entries")
			}
			for _, want := range []string{"mcpServers.b.command", "PATH directory " + tc.refused, `"tool"`, `server "a"`, "remove " + tc.refused + ` from PATH in server "b"'s "env"`} {
				if !strings.Contains(e.Error(), want) {
					t.Errorf("message %q does not say %q", e.Error(), want)
				}
			}
		})
	}
}

// An interpreter's script (its first argument, after "run" for deno and
// bun), absolute or from the server's cwd, is refused where another
// server may write; a flag is no script.
func TestRefuseCrossWritesScript(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	for _, tc := range []struct {
		name, b, field string
	}{
		{"absolute node script", fmt.Sprintf(`"command": "node", "args": [%q]`, filepath.Join(a, "s.js")), "args[0]"},
		{"relative python script", `"command": "python3", "args": ["../a/s.py", "--x"]`, "args[0]"},
		{"deno run after flags", fmt.Sprintf(`"command": "/usr/bin/deno", "args": ["run", "-A", %q]`, filepath.Join(a, "s.ts")), "args[2]"},
		{"bash script", `"command": "bash", "args": ["../a/s.sh"]`, "args[0]"},
		{"python module", `"command": "python3", "args": ["-m", "../a/s"]`, ""},
		{"not an interpreter", fmt.Sprintf(`"command": "cat", "args": [%q]`, filepath.Join(a, "s.js")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := fmt.Sprintf(`{"mcpServers": {"a": {"command": "/bin/x", "cwd": %q},
  "b": {"cwd": %q, "env": {"PATH": "/usr/bin"}, `+tc.b+`}}}`, a, filepath.Join(dir, "b"))
			cfg, err := ParseAll(filepath.Join(dir, "config.json"), []byte(file), nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg.RefuseCrossWrites("")
			e := cfg.Broken["b"]
			if tc.field == "" {
				if e != nil {
					t.Fatalf("b refused: %v", e)
				}
				return
			}
			if e == nil || e.Field != "mcpServers.b."+tc.field || !strings.Contains(e.Problem, a+"/s.") || !strings.Contains(e.Problem, `server "a"`) {
				t.Errorf("b: %v, want its %s refused", e, tc.field)
			}
		})
	}
}

// A server's envFile in a place it may write, read through a link it could
// have made there, leading out of the place (here to a file of another
// server's), is refused: Warden would read any file for it. Links within
// the place, and above it, are the user's or harmless.
func TestRefuseEnvFileLinkedOut(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	testenv.WriteFiles(t, dir, map[string]string{
		"secrets/a.env": "TOKEN=of-a\n", "b/inner/own.env": "K=1\n", "real/c/.env": "K=2\n", "state/servers/d/x": "",
	})
	for link, target := range map[string]string{
		"b/.env":                    "../secrets/a.env", // out of b's cwd
		"b/within.env":              "inner/own.env",    // within it
		"c":                         "real/c",           // above the place: the user's
		"state/servers/d/data/.env": "../../../../secrets/a.env",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, link)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	load := func(b, envFile string) *Config {
		file := fmt.Sprintf(`{"mcpServers": {"a": {"command": "x", "envFile": %q}, %q: {"command": "y", "cwd": %q, "envFile": %q}}}`,
			filepath.Join(dir, "secrets/a.env"), b, filepath.Join(dir, b), filepath.Join(dir, envFile))
		cfg, err := ParseAll(filepath.Join(dir, "config.json"), []byte(file), env())
		if err != nil {
			t.Fatal(err)
		}
		cfg.RefuseCrossWrites(state)
		return cfg
	}
	for _, tc := range []struct{ server, envFile string }{{"b", "b/.env"}, {"d", "state/servers/d/data/.env"}} {
		cfg := load(tc.server, tc.envFile)
		e := cfg.Broken[tc.server]
		if e == nil || cfg.Servers[tc.server] != nil {
			t.Fatalf("%s: loaded with %s read through a link out of its place (env %v)", tc.server, tc.envFile, cfg.Servers[tc.server])
		}
		for _, want := range []string{"mcpServers." + tc.server + ".envFile", "a link that leads out of it", filepath.Join(dir, "secrets/a.env"), "replace the link"} {
			if !strings.Contains(e.Error(), want) {
				t.Errorf("message %q does not say %q", e.Error(), want)
			}
		}
		if cfg.Servers["a"] == nil {
			t.Errorf("a, whose file it is, was not loaded: %v", cfg.Broken["a"])
		}
	}
	for _, tc := range []struct{ server, envFile string }{{"b", "b/within.env"}, {"c", "c/.env"}} {
		if cfg := load(tc.server, tc.envFile); cfg.Servers[tc.server] == nil {
			t.Errorf("%s with %s refused: %v", tc.server, tc.envFile, cfg.Broken[tc.server])
		}
	}
}

// A place and a path in it may be spelled through different links (the
// user's alias of a directory): the checks compare them with their links
// resolved too. b's envFile, in its own cwd spelled the other way, links
// out to a's env file; c's envFile lies in a's cwd spelled the other way.
func TestRefuseAcrossSpellings(t *testing.T) {
	dir := t.TempDir()
	testenv.WriteFiles(t, dir, map[string]string{"secrets/a.env": "TOKEN=of-a\n", "real/b/keep": "", "real/a/.env": "K=1\n"})
	for link, target := range map[string]string{"alias": "real", "real/b/.env": "../../secrets/a.env"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ server, problem string }{
		{"b", "a link that leads out of it"},
		{"c", `which server "a" may write`},
	} {
		for _, spelling := range [][2]string{{"real", "alias"}, {"alias", "real"}} {
			cwd, envFile := filepath.Join(dir, spelling[0], tc.server), filepath.Join(dir, spelling[1], tc.server, ".env")
			if tc.server == "c" {
				cwd, envFile = filepath.Join(dir, "c"), filepath.Join(dir, spelling[1], "a", ".env")
			}
			file := fmt.Sprintf(`{"mcpServers": {"a": {"command": "x", "cwd": %q, "envFile": %q}, %q: {"command": "y", "cwd": %q, "envFile": %q}}}`,
				filepath.Join(dir, spelling[0], "a"), filepath.Join(dir, "secrets/a.env"), tc.server, cwd, envFile)
			cfg, err := ParseAll(filepath.Join(dir, "config.json"), []byte(file), env())
			if err != nil {
				t.Fatal(err)
			}
			cfg.RefuseCrossWrites(filepath.Join(dir, "state"))
			if e := cfg.Broken[tc.server]; e == nil || !strings.Contains(e.Error(), tc.problem) {
				t.Errorf("%s with %s spelled %v: loaded (%v), want refused saying %q", tc.server, envFile, spelling, e, tc.problem)
			}
		}
	}
}

// BenchmarkRefuseCrossWrites checks 28 stdio servers, each with a cwd and
// an env file in it, against each other, as a config load does.
func BenchmarkRefuseCrossWrites(b *testing.B) {
	dir := b.TempDir()
	servers := map[string]any{}
	for i := range 28 {
		name := "s" + strconv.Itoa(i)
		testenv.WriteFiles(b, dir, map[string]string{name + "/.env": "K=1\n"})
		servers[name] = map[string]any{"command": "npx", "cwd": filepath.Join(dir, name), "envFile": filepath.Join(dir, name, ".env")}
	}
	file, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		cfg, err := ParseAll(filepath.Join(dir, "config.json"), file, env())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cfg.RefuseCrossWrites(filepath.Join(dir, "state"))
		if len(cfg.Broken) > 0 {
			b.Fatal(cfg.Broken)
		}
	}
}
