package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenmcp/warden/config"
)

// host is an MCP host (a client application) whose config file Warden
// imports from and points at itself.
type host struct {
	name, title string
	// files are where the host keeps its servers on Linux, most likely
	// first; the first that exists is used, else the first.
	files func() []string
	key   string // the servers map's key; "" for Codex's TOML
	// http is the entry that reaches Warden's /mcp at url; nil for a host
	// that can only launch commands, which gets warden stdio.
	http func(url string) map[string]any
	cli  func(url string, stdio []string) string // the host's own command to add it, if any
}

func home(p ...string) string {
	h, _ := os.UserHomeDir()
	return filepath.Join(append([]string{h}, p...)...)
}

// xdgConfig is $XDG_CONFIG_HOME (else ~/.config) joined with p.
func xdgConfig(p ...string) string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(append([]string{x}, p...)...)
	}
	return home(append([]string{".config"}, p...)...)
}

var hosts = []host{
	{name: "claude-desktop", title: "Claude Desktop", key: "mcpServers",
		files: func() []string { return []string{xdgConfig("Claude", "claude_desktop_config.json")} }},
	{name: "claude-code", title: "Claude Code", key: "mcpServers",
		files: func() []string { return []string{home(".claude.json")} },
		http:  func(url string) map[string]any { return map[string]any{"type": "http", "url": url} },
		cli: func(url string, _ []string) string {
			return "claude mcp add --scope user --transport http warden " + url
		}},
	{name: "cursor", title: "Cursor", key: "mcpServers",
		files: func() []string { return []string{home(".cursor", "mcp.json")} },
		http:  func(url string) map[string]any { return map[string]any{"url": url} }},
	{name: "vscode", title: "VS Code", key: "servers",
		files: func() []string { return []string{xdgConfig("Code", "User", "mcp.json")} },
		http:  func(url string) map[string]any { return map[string]any{"type": "http", "url": url} },
		cli: func(url string, _ []string) string {
			return `code --add-mcp '{"name":"warden","type":"http","url":"` + url + `"}'`
		}},
	{name: "cline", title: "Cline", key: "mcpServers",
		files: func() []string {
			return []string{xdgConfig("Code", "User", "globalStorage", "saoudrizwan.claude-dev", "settings", "cline_mcp_settings.json"),
				home(".cline", "data", "settings", "cline_mcp_settings.json")}
		},
		http: func(url string) map[string]any { return map[string]any{"type": "streamableHttp", "url": url} }},
	{name: "windsurf", title: "Windsurf", key: "mcpServers",
		files: func() []string { return []string{home(".codeium", "windsurf", "mcp_config.json")} },
		http:  func(url string) map[string]any { return map[string]any{"serverUrl": url} }},
	{name: "codex", title: "Codex", key: "",
		files: func() []string {
			if h := os.Getenv("CODEX_HOME"); h != "" {
				return []string{filepath.Join(h, "config.toml")}
			}
			return []string{home(".codex", "config.toml")}
		},
		cli: func(_ string, stdio []string) string { return "codex mcp add warden -- " + shellJoin(stdio) }},
}

func hostNames() string {
	var names []string
	for _, h := range hosts {
		names = append(names, h.name)
	}
	return strings.Join(names, ", ")
}

func findHost(name string) (*host, error) {
	for i := range hosts {
		if hosts[i].name == strings.ToLower(name) {
			return &hosts[i], nil
		}
	}
	return nil, usageErrorf("%q is not a host Warden knows; known hosts are %s (or give the file itself)", name, hostNames())
}

// file is the host's config file: the first of its files that exists.
func (h *host) file() string {
	files := h.files()
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return files[0]
}

// readServers reads the servers of a host's config file.
func readServers(path string) (*config.Config, error) {
	data, err := config.ReadFile(path)
	var ce *config.Error
	if errors.As(err, &ce) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if config.IsTOML(path) {
		return config.ParseCodex(path, data)
	}
	return config.ParseHost(path, data)
}

// stdioCommand is the command line that runs the stdio bridge to the
// daemon this CLI talks to.
func (g *globals) stdioCommand() []string {
	self, err := os.Executable()
	if err != nil || strings.Contains(self, "go-build") { // `go run`: the binary is temporary
		self = "warden"
	}
	cmd := []string{self, "stdio"}
	if g.configPath != "" {
		cmd = append(cmd, "--config", g.configFile())
	}
	return cmd
}

// shellJoin quotes a command line for a POSIX shell.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	return strings.Join(q, " ")
}

// hostEntry is the entry that points host h at Warden, as the text to add
// to its file.
func (g *globals) hostEntry(h *host) (entry any, text string) {
	listen := g.listen()
	stdio := g.stdioCommand()
	if h.http != nil {
		entry = h.http(baseURL(listen) + "/mcp")
	} else {
		entry = struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		}{stdio[0], stdio[1:]}
	}
	if h.key == "" {
		args, _ := json.Marshal(stdio[1:])
		cmd, _ := json.Marshal(stdio[0])
		return entry, fmt.Sprintf("[mcp_servers.warden]\ncommand = %s\nargs = %s\n", cmd, args)
	}
	b, _ := json.MarshalIndent(map[string]any{h.key: map[string]any{"warden": entry}}, "", "  ")
	return entry, string(b) + "\n"
}

// hostHasWarden reports whether the host's file already has a server
// named warden.
func hostHasWarden(path string) bool {
	cfg, err := readServers(path)
	if err != nil {
		return false
	}
	return cfg.Servers["warden"] != nil || cfg.Broken["warden"] != nil
}

// backup copies path beside itself, keeping its mode, and returns the copy's name.
func backup(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	name := path + ".warden-backup"
	for i := 1; ; i++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if os.IsExist(err) {
			name = fmt.Sprintf("%s.warden-backup-%d", path, i)
			continue
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", err
		}
		return name, f.Close()
	}
}

// appendTOML appends text to a TOML file, on lines of its own.
func appendTOML(path, text string) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		text = "\n" + text
	}
	if len(data) > 0 {
		text = "\n" + text
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// sortedServerNames lists the names of cfg's servers, loaded or not.
func sortedServerNames(cfg *config.Config) []string {
	var names []string
	for n := range cfg.Servers {
		names = append(names, n)
	}
	for n := range cfg.Broken {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
