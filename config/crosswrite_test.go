package config

import (
	"fmt"
	"path/filepath"
	"slices"
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
