package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const commented = `// Warden config
{
  /* where to listen */
  "listen": "127.0.0.1:7373", // default
  "mcpServers": {
    // the memory server
    "memory": {"command": "npx", "args": ["-y", "m",],}, // trailing
    /* remote one */
    "remote": {
      "url": "https://example.test/mcp", // endpoint
    },
  },
  // end
}
`

func write(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func comments(s string) []string {
	var out []string
	for _, c := range []string{"// Warden config", "/* where to listen */", "// default", "// the memory server",
		"// trailing", "/* remote one */", "// endpoint", "// end"} {
		if strings.Contains(s, c) {
			out = append(out, c)
		}
	}
	return out
}

func TestAddRemoveKeepsComments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	write(t, path, commented, 0o640)
	s := &Server{Command: "mcp-new", Args: []string{"--root", "/srv/<x>&"}, Env: map[string]string{"B": "2", "A": "${env:UNSET_IN_TEST}"},
		Trusted: true, CallTimeout: 90 * time.Second, Guardrails: Guardrails{AllowSecrets: true}, Tools: map[string]ToolOverride{"rm": {Class: ClassDestructive, RecordArgs: true}, "ls": {Hidden: true}}}
	if err := AddServer(path, "new", s); err != nil {
		t.Fatal(err)
	}
	added := read(t, path)
	if got := comments(added); len(got) != 8 {
		t.Errorf("comments after add: %v\n%s", got, added)
	}
	if !strings.Contains(added, "\n    \"new\": {\n      \"command\": \"mcp-new\",\n") || !strings.Contains(added, `"/srv/<x>&"`) {
		t.Errorf("new entry not indented like its neighbours:\n%s", added)
	}
	cfg, err := Parse(path, []byte(added), env("UNSET_IN_TEST", "v"))
	if err != nil {
		t.Fatalf("%v\n%s", err, added)
	}
	n := cfg.Servers["new"]
	if n == nil || n.Command != "mcp-new" || !slices.Equal(n.Args, s.Args) || n.Env["A"] != "v" || n.Env["B"] != "2" ||
		!n.Trusted || n.CallTimeout != 90*time.Second || !n.Guardrails.AllowSecrets || n.Tools["rm"] != (ToolOverride{Class: ClassDestructive, RecordArgs: true}) || !n.Tools["ls"].Hidden ||
		len(cfg.Servers) != 3 {
		t.Errorf("added server: %v %+v", n, cfg.Servers)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode())
	}

	if err := RemoveServer(path, "new"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != commented {
		t.Errorf("add+remove changed the file:\n%s", got)
	}

	// Removing servers the person wrote keeps the comments around them.
	for _, name := range []string{"memory", "remote"} {
		if err := RemoveServer(path, name); err != nil {
			t.Fatal(err)
		}
		out := read(t, path)
		if _, err := Parse(path, []byte(out), env()); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	out := read(t, path)
	if got := comments(out); !slices.Equal(got, []string{"// Warden config", "/* where to listen */", "// default",
		"// the memory server", "// trailing", "/* remote one */", "// end"}) { // "// endpoint" was inside remote
		t.Errorf("comments after removals: %v\n%s", got, out)
	}
}

func TestAddStrictJSONStaysStrict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	orig := "{\n\t\"mcpServers\": {\n\t\t\"a\": {\n\t\t\t\"command\": \"x\"\n\t\t}\n\t}\n}\n"
	write(t, path, orig, 0o600)
	if err := AddServer(path, "b", &Server{URL: "https://h/sse"}); err != nil {
		t.Fatal(err)
	}
	out := read(t, path)
	if !json.Valid([]byte(out)) {
		t.Fatalf("not standard JSON:\n%s", out)
	}
	if !strings.Contains(out, "\n\t\t\"b\": {\n\t\t\t\"url\": \"https://h/sse\"\n\t\t}\n\t}\n}\n") || strings.Contains(out, "transport") {
		t.Errorf("tab indentation not followed:\n%s", out)
	}
	if err := RemoveServer(path, "b"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != orig {
		t.Errorf("not restored:\n%s", got)
	}
	if err := RemoveServer(path, "a"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); !json.Valid([]byte(got)) {
		t.Errorf("empty not valid JSON:\n%s", got)
	}
}

func TestAddCreatesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "config.json")
	if err := AddServer(path, "remote", &Server{URL: "https://h/mcp", Headers: map[string]string{"Authorization": "Bearer ${env:TOK}"}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v", fi, err)
	}
	cfg, err := Parse(path, []byte(read(t, path)), env("TOK", "t"))
	if err != nil || cfg.Servers["remote"].Headers["Authorization"] != "Bearer t" {
		t.Fatalf("%v\n%s", err, read(t, path))
	}
	// Adding where mcpServers is absent, or empty on one line.
	for _, in := range []string{`{"listen": "127.0.0.1:1"}`, `{"mcpServers": {}}`, `{"mcpServers": null}`, "{}", ""} {
		write(t, path, in, 0o600)
		if err := AddServer(path, "x", &Server{Command: "c"}); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		cfg, err := Load(path)
		if err != nil || cfg.Servers["x"] == nil || cfg.Servers["x"].Command != "c" {
			t.Fatalf("%s: %v\n%s", in, err, read(t, path))
		}
	}
}

func TestAddWritesUnexpanded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	cfg, err := Parse(path, []byte(`{"mcpServers": {"r": {"url": "https://h/mcp?k=${env:T}", "headers": {"A": "${env:T}"}}}}`), env("T", marker))
	if err != nil {
		t.Fatal(err)
	}
	if err := AddServer(path, "copy", cfg.Servers["r"]); err != nil {
		t.Fatal(err)
	}
	if out := read(t, path); strings.Contains(out, marker) || !strings.Contains(out, "${env:T}") {
		t.Errorf("secret written:\n%s", out)
	}
}

func TestEditErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	orig := `{"mcpServers": {"a": {"command": "x"}, "b": {"url": "https://h/mcp"}}}`
	write(t, path, orig, 0o600)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"exists", AddServer(path, "a", &Server{Command: "y"}), "config " + path + `: mcpServers.a: a server with this name already exists`},
		{"bad name", AddServer(path, "a__b", &Server{Command: "y"}), `mcpServers.a__b: "a__b" contains "__"`},
		{"bad server", AddServer(path, "c", &Server{}), `mcpServers.c: has neither "command" nor "url"`},
		{"bad url", AddServer(path, "c", &Server{URL: "h/mcp"}), `mcpServers.c.url: is not an http:// or https:// URL`},
		{"absent", RemoveServer(path, "zz"), "config " + path + ": mcpServers.zz: no such server; known servers are a, b"},
	} {
		var e *Error
		if !errors.As(tc.err, &e) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, tc.err)
		}
	}
	if got := read(t, path); got != orig {
		t.Errorf("file changed: %s", got)
	}
	if err := RemoveServer(filepath.Join(dir, "none.json"), "a"); err == nil || !strings.Contains(err.Error(), "the file has no servers") {
		t.Errorf("missing file: %v", err)
	}
	write(t, path, `{"mcpServers": {`, 0o600)
	if err := AddServer(path, "c", &Server{Command: "y"}); err == nil || !strings.Contains(err.Error(), "invalid JSON") {
		t.Errorf("broken file: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

// A bad server elsewhere blocks neither adding nor removing it; a server
// added that cannot load is refused.
func TestBadServerBlocksNoEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	write(t, path, `{"mcpServers": {"ok": {"command": "x"}, "bad": {"comand": "x"}}}`, 0o600)
	if err := AddServer(path, "c", &Server{Command: "y"}); err != nil {
		t.Errorf("add beside a bad server: %v", err)
	}
	cfg, err := LoadAll(path)
	if err != nil || cfg.Servers["c"] == nil || cfg.Broken["bad"] == nil || !strings.Contains(cfg.Broken["bad"].Error(), "mcpServers.bad.comand") {
		t.Fatalf("LoadAll after the add: %v, %v", cfg, err)
	}
	if err := AddServer(path, "d", &Server{URL: "https://x.test/mcp", Headers: map[string]string{"A": "${input:tok}"}}); err == nil ||
		!strings.Contains(err.Error(), "mcpServers.d.headers.A") {
		t.Errorf("adding a server that cannot load: %v", err)
	}
	if err := RemoveServer(path, "bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatal(err)
	}
}

func TestEditKeepsCRLFAndSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "config.json")
	write(t, real, "{\r\n  \"mcpServers\": {\r\n    \"a\": {\"command\": \"x\"}\r\n  }\r\n}\r\n", 0o600)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := AddServer(link, "b", &Server{Command: "y", Args: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("symlink replaced")
	}
	out := read(t, real)
	if strings.Count(out, "\n") != strings.Count(out, "\r\n") {
		t.Errorf("mixed line endings: %q", out)
	}
	if cfg, err := Load(link); err != nil || cfg.Servers["b"] == nil {
		t.Fatal(err)
	}
}

func TestRemoveLayouts(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"middle, comments around",
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"}, // about a\n  // about b\n  \"b\": {\"command\": \"x\"}, // b's line\n  \"c\": {\"command\": \"x\"}\n}}",
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"}, // about a\n  // about b\n  // b's line\n  \"c\": {\"command\": \"x\"}\n}}"},
		{"middle, no comments",
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"b\": {\"command\": \"x\"},\n  \"c\": {\"command\": \"x\"}\n}}",
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"c\": {\"command\": \"x\"}\n}}"},
		{"last, no trailing comma",
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"b\": {\"command\": \"x\"}\n}}",
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"}\n}}"},
		{"last, trailing comma",
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"b\": {\"command\": \"x\"},\n}}",
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n}}"},
		{"only",
			"{\"mcpServers\": {\n  \"b\": {\"command\": \"x\"}\n}}",
			"{\"mcpServers\": {}}"},
		{"compact",
			`{"mcpServers": {"a": {"command": "x"}, "b": {"command": "x"}, "c": {"command": "x"}}}`,
			`{"mcpServers": {"a": {"command": "x"}, "c": {"command": "x"}}}`},
		{"line comment then same-line member",
			"{\"mcpServers\": {\"a\": {\"command\": \"x\"}, // about b\n \"b\": {\"command\": \"x\"}, \"c\": {\"command\": \"x\"}}}",
			"{\"mcpServers\": {\"a\": {\"command\": \"x\"}, // about b\n \"c\": {\"command\": \"x\"}}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			write(t, path, tc.in, 0o600)
			if err := RemoveServer(path, "b"); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// Edits made at once by several commands all land: each reads the file
// only when the one before it has written.
func TestConcurrentAddsAllLand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	write(t, path, "{}\n", 0o600)
	const n = 20
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- AddServer(path, "s"+strings.Repeat("x", i), &Server{Command: "c"}) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != n {
		t.Fatalf("%d of %d servers added at once are in the file", len(cfg.Servers), n)
	}
}

// A dangling symlink stays a symlink: the file is created where it points.
func TestAddThroughDanglingSymlink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "config.json")
	if err := os.Symlink("real/config.json", link); err != nil {
		t.Fatal(err)
	}
	if err := AddServer(link, "a", &Server{Command: "x"}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if cfg, err := Load(filepath.Join(dir, "real", "config.json")); err != nil || cfg.Servers["a"] == nil {
		t.Fatalf("the server is not in the symlink's target: %v", err)
	}
}
