package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// writable is one place a stdio server may write, and why.
type writable struct {
	dir, what string
}

// writablePlaces are the places stdio server s may write, as the sandbox
// confines it: its cwd, its "sandbox.paths.write" entries and its own
// directory <stateDir>/servers/<name>. They are taken as written, made
// absolute and cleaned, links not followed, as the sandbox takes them.
func writablePlaces(s *Server, stateDir string) []writable {
	var out []writable
	if s.Cwd != "" {
		out = append(out, writable{absPath(s.Cwd), `its "cwd"`})
	}
	for _, w := range s.Sandbox.Write {
		out = append(out, writable{absPath(w), `its "sandbox.paths.write"`})
	}
	if stateDir != "" {
		out = append(out, writable{filepath.Join(absPath(stateDir), "servers", s.Name), "its own directory"})
	}
	return out
}

// readsAtStart are the paths whose contents decide what stdio server s
// runs and with what environment, by field: its envFile, its command when
// that is a path (relative to its cwd), and its cwd.
func readsAtStart(s *Server) [][2]string {
	var out [][2]string
	if s.EnvFile != "" {
		out = append(out, [2]string{"envFile", absPath(s.EnvFile)})
	}
	if strings.ContainsRune(s.Command, '/') {
		cmd := s.Command
		if !filepath.IsAbs(cmd) && s.Cwd != "" {
			cmd = filepath.Join(s.Cwd, cmd)
		}
		out = append(out, [2]string{"command", absPath(cmd)})
	}
	if s.Cwd != "" {
		out = append(out, [2]string{"cwd", absPath(s.Cwd)})
	}
	return out
}

// RefuseCrossWrites leaves out each stdio server whose envFile, command
// (when a path) or cwd lies where another stdio server may write (see
// writablePlaces; stateDir is the state dir the servers' own directories
// are in): that server could change what the other runs, or its
// environment, at its next start. The entry goes to Broken with a message
// naming both servers, the path and the fix; the other servers load.
// Every stdio server counts as one that may write, disabled ones too: a
// disabled server has run, or will once enabled. A server's own places
// are no concern of this: it may change its own environment, which it
// could already do from inside.
func (c *Config) RefuseCrossWrites(stateDir string) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n, s := range c.Servers {
			if s.Transport == TransportStdio && !yield(n) {
				return
			}
		}
	})
	refused := map[string]*Error{}
	for _, b := range names {
		e := c.crossWrite(c.Servers[b], names, stateDir)
		if e != nil {
			refused[b] = e
		}
	}
	for name, e := range refused {
		delete(c.Servers, name)
		if c.Broken == nil {
			c.Broken = map[string]*Error{}
		}
		c.Broken[name] = e
	}
}

// crossWrite is the problem of b's entry when a path it starts from lies
// in a place another of the stdio servers names may write; nil when none.
func (c *Config) crossWrite(b *Server, names []string, stateDir string) *Error {
	for _, field := range readsAtStart(b) {
		for _, a := range names {
			if a == b.Name {
				continue
			}
			for _, w := range writablePlaces(c.Servers[a], stateDir) {
				if !inside(field[1], w.dir) {
					continue
				}
				fix := fmt.Sprintf("move it out of %s, or narrow server %q's %s", w.dir, a, strings.TrimPrefix(w.what, "its "))
				if w.what == "its own directory" {
					fix = fmt.Sprintf("move it out of %s, which is server %q's own", w.dir, a)
				}
				return &Error{File: c.Path, Field: join(join("mcpServers", b.Name), field[0]),
					Problem: fmt.Sprintf("%s lies in %s, which server %q may write (%s): it could change what server %q runs or its environment at its next start; server %q is not loaded",
						field[1], w.dir, a, w.what, b.Name, b.Name),
					Fix: fix}
			}
		}
	}
	return nil
}

// absPath is p made absolute against Warden's working directory, where
// the launcher takes a relative one from, and cleaned.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// inside reports whether path is dir or below it, by their text.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
