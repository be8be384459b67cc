package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// productExample is the example from PRODUCT.md, section "Config file".
const productExample = `{
  "listen": "127.0.0.1:7373",          // default
  "stateDir": "/path",                 // optional, see State dir
  "mcpServers": {
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
               "env": {"MEMORY_FILE_PATH": "/tmp/m.json"}, "cwd": "/tmp"},
    "remote": {"url": "https://example.test/mcp",
               "headers": {"Authorization": "Bearer ${env:REMOTE_TOKEN}"}},
    "legacy": {"url": "http://127.0.0.1:9000/sse", "transport": "sse"},
    "fs": {"command": "mcp-fs", "trusted": true, "callTimeout": "60s",
           "tools": {"read_file": {"class": "read"}, "move_file": {"hidden": true}}}
  }
}
`

// env returns a lookupEnv over a fixed map.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseProductExample(t *testing.T) {
	cfg, err := Parse("/x/config.json", []byte(productExample), env("REMOTE_TOKEN", "tok"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:7373" || cfg.StateDir != "/path" || cfg.Path != "/x/config.json" {
		t.Errorf("top level: %+v", cfg)
	}
	if got := len(cfg.Servers); got != 4 {
		t.Fatalf("servers: %d", got)
	}
	mem := cfg.Servers["memory"]
	if mem.Name != "memory" || mem.Command != "npx" || mem.Transport != TransportStdio ||
		!slices.Equal(mem.Args, []string{"-y", "@modelcontextprotocol/server-memory"}) ||
		mem.Env["MEMORY_FILE_PATH"] != "/tmp/m.json" || mem.Cwd != "/tmp" || mem.CallTimeout != 60*time.Second {
		t.Errorf("memory: %#v %v %v", mem, mem.Args, mem.Env)
	}
	rem := cfg.Servers["remote"]
	if rem.URL != "https://example.test/mcp" || rem.Transport != TransportHTTP || rem.Headers["Authorization"] != "Bearer tok" {
		t.Errorf("remote: %v %v", rem, rem.Headers)
	}
	leg := cfg.Servers["legacy"]
	if leg.Transport != TransportSSE || leg.URL != "http://127.0.0.1:9000/sse" {
		t.Errorf("legacy: %v", leg)
	}
	fs := cfg.Servers["fs"]
	if !fs.Trusted || fs.Disabled || fs.CallTimeout != time.Minute ||
		fs.Tools["read_file"] != (ToolOverride{Class: ClassRead}) || fs.Tools["move_file"] != (ToolOverride{Hidden: true}) {
		t.Errorf("fs: %v %v", fs, fs.Tools)
	}
}

func TestDefaults(t *testing.T) {
	for _, in := range []string{"", "  \n", "{}", "// c\n{\"mcpServers\": null,}", "\xEF\xBB\xBF{}"} {
		cfg, err := Parse("f", []byte(in), env())
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if cfg.Listen != DefaultListen || cfg.Servers == nil || len(cfg.Servers) != 0 ||
			cfg.Activity != (Activity{MaxEntries: 10000, MaxAge: 7 * 24 * time.Hour}) || cfg.Missing {
			t.Errorf("%q: %+v", in, cfg)
		}
	}
	cfg, err := Parse("f", []byte(`{"mcpServers": {"a": {"command": "x"}}, "activity": {"maxEntries": 5, "maxAge": "1h"}}`), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Servers["a"].CallTimeout != DefaultCallTimeout || cfg.Activity != (Activity{5, time.Hour}) {
		t.Errorf("%+v", cfg)
	}
}

func TestInferTransport(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{`{"command": "x"}`, "stdio"},
		{`{"url": "https://h/mcp"}`, "http"},
		{`{"url": "https://h/sse"}`, "sse"},
		{`{"url": "https://h/v1/sse/?k=1"}`, "sse"},
		{`{"url": "https://sse"}`, "http"},
		{`{"url": "https://h/sse", "transport": "http"}`, "http"},
		{`{"url": "https://h/mcp", "transport": "sse"}`, "sse"},
		{`{"command": "x", "transport": "stdio"}`, "stdio"},
		// "type", as Claude Code, VS Code and Cline write it.
		{`{"type": "stdio", "command": "x"}`, "stdio"},
		{`{"type": "http", "url": "https://h/sse"}`, "http"},
		{`{"type": "sse", "url": "https://h/mcp"}`, "sse"},
		{`{"type": "streamableHttp", "url": "https://h/sse"}`, "http"},
		{`{"type": "http", "transport": "http", "url": "https://h/mcp"}`, "http"},
	} {
		cfg, err := Parse("f", []byte(`{"mcpServers": {"s": `+tc.server+`}}`), env())
		if err != nil {
			t.Fatalf("%s: %v", tc.server, err)
		}
		if got := cfg.Servers["s"].Transport; got != tc.want {
			t.Errorf("%s: transport %q, want %q", tc.server, got, tc.want)
		}
	}
}

func TestStateDir(t *testing.T) {
	home, _ := os.UserHomeDir()
	for _, tc := range []struct{ in, want string }{
		{"/abs/state", "/abs/state"},
		{"state", "/etc/warden/state"},
		{"~/st", filepath.Join(home, "st")},
	} {
		cfg, err := Parse("/etc/warden/config.json", []byte(`{"stateDir": "`+tc.in+`"}`), env())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.StateDir != tc.want {
			t.Errorf("%s: %s, want %s", tc.in, cfg.StateDir, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")

	cfg, err := Load(path)
	if err != nil || !cfg.Missing || cfg.Path != path || cfg.Listen != DefaultListen || cfg.Servers == nil {
		t.Fatalf("missing file: %+v, %v", cfg, err)
	}

	if err := os.WriteFile(path, []byte(`{"listen": "127.0.0.1:9999",}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = Load(path)
	if err != nil || cfg.Missing || cfg.Listen != "127.0.0.1:9999" {
		t.Fatalf("file: %+v, %v", cfg, err)
	}

	_, err = Load(dir) // a directory
	if e, ok := err.(*Error); !ok || e.File != dir {
		t.Fatalf("directory: %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("WARDEN_CONFIG", "/a/b.json")
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	t.Setenv("HOME", "/home/u")
	if got := DefaultPath(); got != "/a/b.json" {
		t.Errorf("WARDEN_CONFIG: %s", got)
	}
	t.Setenv("WARDEN_CONFIG", "")
	if got := DefaultPath(); got != "/xdg/warden/config.json" {
		t.Errorf("XDG: %s", got)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	if got := DefaultPath(); got != "/home/u/.config/warden/config.json" {
		t.Errorf("home: %s", got)
	}
}

func TestDiff(t *testing.T) {
	old, err := Parse("f", []byte(`{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"url": "https://h/mcp"}}}`), env())
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Parse("f", []byte(`{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y", "trusted": true}, "d": {"command": "z"}}}`), env())
	if err != nil {
		t.Fatal(err)
	}
	c := Diff(old, cur)
	if !slices.Equal(c.Added, []string{"d"}) || !slices.Equal(c.Removed, []string{"c"}) || !slices.Equal(c.Changed, []string{"b"}) {
		t.Errorf("%+v", c)
	}
	if !Diff(old, old).Empty() || len(Diff(nil, old).Added) != 3 {
		t.Error("empty or nil diff")
	}
}

func TestToolSearch(t *testing.T) {
	cfg, err := Parse("f", []byte(`{}`), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ToolSearch != ToolSearchOff || cfg.ToolSearchBudget != DefaultToolSearchBudget || cfg.ToolSearchRerank != RerankNone {
		t.Errorf("defaults: %q %d %q", cfg.ToolSearch, cfg.ToolSearchBudget, cfg.ToolSearchRerank)
	}
	cfg, err = Parse("f", []byte(`{"toolSearch": "auto", "toolSearchBudget": 500}`), env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ToolSearch != ToolSearchAuto || cfg.ToolSearchBudget != 500 || cfg.ToolSearchRerank != RerankNone {
		t.Errorf("set: %q %d %q", cfg.ToolSearch, cfg.ToolSearchBudget, cfg.ToolSearchRerank)
	}
	// The object form: the mode and the rerank, each optional.
	for in, want := range map[string][2]string{
		`{"mode": "on", "rerank": "sampling"}`: {ToolSearchOn, RerankSampling},
		`{"rerank": "sampling"}`:               {ToolSearchOff, RerankSampling},
		`{"mode": "auto", "rerank": ""}`:       {ToolSearchAuto, RerankNone},
		`{"rerank": "none"}`:                   {ToolSearchOff, RerankNone},
		`{}`:                                   {ToolSearchOff, RerankNone},
	} {
		cfg, err = Parse("f", []byte(`{"toolSearch": `+in+`}`), env())
		if err != nil || cfg.ToolSearch != want[0] || cfg.ToolSearchRerank != want[1] {
			t.Errorf("toolSearch %s: %+v (%v), want %q %q", in, cfg, err, want[0], want[1])
		}
	}
}

// An empty file is the default config, marked Empty; Sum tells two reads
// of different bytes apart, and the same bytes alike.
func TestEmptyAndSum(t *testing.T) {
	empty, err := Parse("/c.json", []byte(" \n"), nil)
	if err != nil || !empty.Empty || len(empty.Servers) != 0 {
		t.Fatalf("an empty file: %+v, %v", empty, err)
	}
	a, _ := Parse("/c.json", []byte(`{"mcpServers": {}}`), nil)
	b, _ := Parse("/c.json", []byte(`{"mcpServers": {}}`), nil)
	c, _ := Parse("/c.json", []byte(`{"mcpServers": {} }`), nil)
	if a.Empty || a.Sum != b.Sum || a.Sum == c.Sum || a.Sum == empty.Sum {
		t.Fatalf("Sum: same bytes %t, other bytes %t", a.Sum == b.Sum, a.Sum == c.Sum)
	}
}

// The top level's "tasks" bounds the tasks.
func TestParseTaskBounds(t *testing.T) {
	cfg, err := Parse("/x/config.json", []byte(`{"tasks": {"retention": "10m", "maxPerServer": 4, "maxPerCaller": 2}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Tasks{Retention: 10 * time.Minute, MaxPerServer: 4, MaxPerCaller: 2}); cfg.Tasks != want {
		t.Errorf("tasks %+v, want %+v", cfg.Tasks, want)
	}
}

// A server's "guardrails" lets secrets through only when it says "allow".
func TestParseGuardrails(t *testing.T) {
	cfg, err := Parse("/x/config.json", []byte(`{"mcpServers": {
		"a": {"command": "a", "guardrails": {"secrets": "allow"}},
		"b": {"command": "b", "guardrails": {"secrets": "block"}},
		"c": {"command": "c", "guardrails": {}},
		"d": {"command": "d"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Servers["a"].Guardrails.AllowSecrets {
		t.Error(`"allow" does not allow`)
	}
	for _, name := range []string{"b", "c", "d"} {
		if cfg.Servers[name].Guardrails.AllowSecrets {
			t.Errorf("%s allows secrets", name)
		}
	}
}

// A server's "tasks" names the tools run as tasks: all, or a list.
func TestParseTasks(t *testing.T) {
	cfg, err := Parse("/x/config.json", []byte(`{"mcpServers": {
		"a": {"command": "a", "tasks": "all"},
		"b": {"command": "b", "tasks": ["build", "deploy"]},
		"c": {"command": "c"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := cfg.Servers["a"].Tasks, cfg.Servers["b"].Tasks, cfg.Servers["c"].Tasks
	if !a.Has("anything") || !b.Has("deploy") || b.Has("test") || c.Has("build") {
		t.Errorf("tasks: a %+v, b %+v, c %+v", a, b, c)
	}
	if a.Equal(b) || !b.Equal(TaskTools{Names: []string{"build", "deploy"}}) {
		t.Errorf("Equal: a %+v, b %+v", a, b)
	}
}
