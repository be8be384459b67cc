package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// ParseHost reads the servers of another MCP host's JSON config file, for
// import: its "mcpServers" (or VS Code's "servers") only, since the rest of
// such a file is the host's own (Claude Code's ~/.claude.json holds much
// else). Its entries are read as Parse reads them, except that ${env:}
// references are kept as written, never expanded, so that no secret is
// copied; ${workspaceFolder} and the other path variables are expanded and
// a relative "envFile" made absolute, for the file's workspace, since the
// servers move to a file elsewhere. A server entry that cannot be loaded is
// in Broken, with why; fields the host keeps for itself are in Notes.
func ParseHost(path string, data []byte) (*Config, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if err := CheckBounds(path, data); err != nil {
		return nil, err
	}
	return parseHost(path, data)
}

// parseHost is ParseHost for data known to be within bounds.
func parseHost(path string, data []byte) (*Config, error) {
	cfg := defaults(path)
	d := newDecoder(path, data, func(string) (string, bool) { return "", false }, true)
	d.broken = map[string]*Error{}
	d.ignored = importedServer
	root, err := hujson.Parse(data)
	if err != nil {
		return nil, d.syntaxError(err)
	}
	obj, ok := root.Value.(*hujson.Object)
	if !ok {
		return nil, d.errAt(&root, "", "the file holds "+kindName(&root)+", not an object", `an MCP host's file is an object with "mcpServers"`)
	}
	k := find(obj, "mcpServers")
	if k < 0 {
		k = find(obj, "servers")
	}
	if k < 0 {
		return nil, &Error{File: path, Problem: `has no "mcpServers" (or VS Code's "servers"): no servers to import`,
			Fix: "name the file where the host keeps its MCP servers"}
	}
	if i := find(obj, "inputs"); i >= 0 {
		d.ignore(&obj.Members[i].Value, "inputs", foreignTop["inputs"])
	}
	m := &obj.Members[k]
	if err := d.servers(&m.Value, m.Name.Value.(hujson.Literal).String(), cfg.Servers); err != nil {
		return nil, err
	}
	cfg.Notes = d.notes
	if len(d.broken) > 0 {
		cfg.Broken = d.broken
	}
	return cfg, nil
}

// codexFields maps the fields of Codex's [mcp_servers.NAME] tables to
// Warden's; those mapped to "" are Codex's own, ignored with a note.
var codexFields = map[string]string{
	"command": "command", "args": "args", "env": "env", "cwd": "cwd", "url": "url", "http_headers": "headers",
	"enabled": "", "env_vars": "", "tool_timeout_sec": "", "bearer_token_env_var": "", "env_http_headers": "", // converted below
	"startup_timeout_sec": "", "startup_timeout_ms": "", "enabled_tools": "", "disabled_tools": "",
}

// ParseCodex reads the [mcp_servers.NAME] tables of Codex's config.toml
// (~/.codex/config.toml), for import, like ParseHost. Field paths in
// messages are Warden's, under "mcpServers".
func ParseCodex(path string, data []byte) (*Config, error) {
	doc, err := decodeTOML(path, data)
	if err != nil {
		return nil, err
	}
	servers, ok := doc["mcp_servers"].(map[string]any)
	if !ok {
		return nil, &Error{File: path, Problem: "has no [mcp_servers.NAME] tables: no servers to import"}
	}
	out := map[string]any{}
	var notes []string
	ignore := func(server, field, why string) {
		notes = append(notes, fmt.Sprintf("config %s: mcp_servers.%s.%s: ignored: %s", path, server, field, why))
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		t, ok := servers[name].(map[string]any)
		if !ok {
			out[name] = servers[name] // the decoder says what is wrong with it
			continue
		}
		s := map[string]any{}
		headers := map[string]any{}
		if h, ok := t["http_headers"].(map[string]any); ok {
			headers = h
		}
		for _, f := range slices.Sorted(maps.Keys(t)) {
			v := t[f]
			to, known := codexFields[f]
			switch {
			case importedPolicy[f] != "":
				ignore(name, f, importedPolicy[f])
			case !known:
				s[f] = v // unknown: the decoder names it
			case to != "":
				s[to] = v
			case f == "enabled":
				if b, ok := v.(bool); ok {
					s["disabled"] = !b
				} else {
					s["disabled"] = v
				}
			case f == "tool_timeout_sec":
				if n, ok := v.(int64); ok {
					s["callTimeout"] = fmt.Sprintf("%ds", n)
				} else if x, ok := v.(float64); ok {
					s["callTimeout"] = fmt.Sprintf("%gs", x)
				} else {
					s["callTimeout"] = v
				}
			case f == "bearer_token_env_var":
				headers["Authorization"] = fmt.Sprintf("Bearer ${env:%v}", v)
			case f == "env_http_headers":
				m, _ := v.(map[string]any)
				for h, env := range m {
					headers[h] = fmt.Sprintf("${env:%v}", env)
				}
			case f == "env_vars": // Warden's inheritEnv, which an import does not set
				ignore(name, f, importedPolicy["inheritEnv"])
			default:
				ignore(name, f, "Codex's own setting")
			}
		}
		if len(headers) > 0 {
			s["headers"] = headers
		}
		out[name] = s
	}
	b, err := json.MarshalIndent(map[string]any{"mcpServers": out}, "", "  ")
	if err != nil {
		return nil, err
	}
	cfg, err := parseHost(path, b) // as deep as the TOML, which decodeTOML bounds
	if err != nil {
		return nil, err
	}
	cfg.Notes = append(notes, cfg.Notes...)
	return cfg, nil
}

// IsTOML reports whether path names a TOML file (Codex's config.toml).
func IsTOML(path string) bool { return strings.HasSuffix(strings.ToLower(path), ".toml") }
