package config

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tailscale/hujson"
)

// workspaceOf is the workspace folder of a config file: what
// ${workspaceFolder} means in it and where a relative "envFile" is read
// from. For a project file of VS Code or Cursor (.vscode/mcp.json,
// .cursor/mcp.json) it is the folder above .vscode/ or .cursor/, as those
// hosts mean it; for any other file, the folder that holds it. "" when
// there is no file.
func workspaceOf(file string) string {
	if file == "" {
		return ""
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	if base := filepath.Base(dir); base == ".vscode" || base == ".cursor" {
		return filepath.Dir(dir)
	}
	return dir
}

const envFileFix = "write NAME=VALUE lines, with # for comments"

// loadEnvFile adds the variables of s's "envFile" (v, nil when it has
// none) to s.Env, where a variable of s's own "env" wins over the file's.
// A relative path is read from the workspace folder. The values are
// secrets, as ${env:} expansions are: no message shows one, nor any text
// of the file.
func (d *decoder) loadEnvFile(s *Server, v *hujson.Value, path string) error {
	if v == nil {
		return nil
	}
	if strings.TrimSpace(s.EnvFile) == "" {
		return d.errAt(v, path, "is empty", `write the path of a file of NAME=VALUE lines, such as "${workspaceFolder}/.env"`)
	}
	fix := "create the file, or correct the path"
	if !filepath.IsAbs(s.EnvFile) {
		if d.workspace == "" {
			return d.errAt(v, path, "is a relative path, and the config was not read from a file", "write an absolute path")
		}
		s.EnvFile = filepath.Join(d.workspace, s.EnvFile)
		fix += " (a relative one is read from " + d.workspace + ")"
	}
	s.EnvFile = filepath.Clean(s.EnvFile)
	data, opened, err := readFile(s.EnvFile)
	s.envFileOpened = opened
	if err != nil {
		return d.errAt(v, path, "cannot read "+s.EnvFile+": "+envFileErr(err), fix)
	}
	vars, line, problem := parseDotenv(data)
	if problem != "" {
		return d.errAt(v, path, fmt.Sprintf("%s: line %d %s (the line is not shown: it may hold a secret)", s.EnvFile, line, problem), envFileFix)
	}
	if s.Env == nil {
		s.Env = map[string]string{}
	}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		d.expanded = append(d.expanded, vars[name])
		if _, own := s.Env[name]; !own {
			s.Env[name] = vars[name]
		}
	}
	return nil
}

// envFileErr says why an env file could not be read, without its path,
// which the message names already.
func envFileErr(err error) string {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Problem
	}
	return pathErr(err)
}

// parseDotenv reads the NAME=VALUE lines of a .env file: blank lines and
// lines starting with # are skipped, "export " may come before the name,
// and the value is bare (trimmed, up to a " #" comment), in 'single
// quotes' (taken as is) or in "double quotes" (with \n, \r, \t, \" and \\
// escapes). Values are taken as written: nothing in them is expanded. On
// a problem it answers the line's number and what is wrong, never the
// line's text.
func parseDotenv(data []byte) (vars map[string]string, line int, problem string) {
	vars = map[string]string{}
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(l, "export "), "=")
		name = strings.TrimSpace(name)
		if !ok || !envName.MatchString(name) {
			return nil, i + 1, "is not NAME=VALUE with a name of letters, digits and \"_\""
		}
		v, problem := dotenvValue(strings.TrimSpace(value))
		if problem == "" {
			problem = envValueProblem(v)
		}
		if problem != "" {
			return nil, i + 1, problem
		}
		vars[name] = v
	}
	return vars, 0, ""
}

// dotenvValue reads one value of a .env line (see parseDotenv).
func dotenvValue(s string) (value, problem string) {
	if s == "" || (s[0] != '"' && s[0] != '\'') {
		for i := 1; i < len(s); i++ {
			if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
				s = s[:i]
				break
			}
		}
		return strings.TrimSpace(s), ""
	}
	var b strings.Builder
	quote := s[0]
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == quote:
			if rest := strings.TrimSpace(s[i+1:]); rest != "" && rest[0] != '#' {
				return "", "has text after its closing quote"
			}
			return b.String(), ""
		case c == '\\' && quote == '"' && i+1 < len(s):
			i++
			b.WriteString(unescape(s[i]))
		default:
			b.WriteByte(c)
		}
	}
	return "", "has a quote that does not end on its line"
}

// unescape is what \c stands for in a double-quoted .env value.
func unescape(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 'r':
		return "\r"
	case 't':
		return "\t"
	case '"', '\\':
		return string(c)
	}
	return `\` + string(c)
}
