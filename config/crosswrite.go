package config

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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

// startRead is a path whose contents decide what a stdio server runs or
// with what environment: field is where the entry names it; pathDir, when not
// empty, is the command it is a PATH directory for.
type startRead struct {
	field, path, pathDir string
}

// interpreters are the commands whose first argument (after "run" for
// deno and bun), when not a flag, is the script they run.
var interpreters = []string{"node", "python", "python3", "deno", "bun", "sh", "bash"}

// readsAtStart are the paths whose contents decide what stdio server s
// runs and with what environment: its envFile; its command when that is a
// path (relative to its cwd), or else each directory of the PATH it gets
// (its "env" PATH, or Warden's), since a program put in one is run instead
// of the command or of what it runs; an interpreter's script; and its cwd.
func readsAtStart(s *Server) []startRead {
	var out []startRead
	at := func(field string) string { return join(join("mcpServers", s.Name), field) }
	if s.EnvFile != "" {
		out = append(out, startRead{field: at("envFile"), path: absPath(s.EnvFile)})
	}
	if strings.ContainsRune(s.Command, '/') {
		out = append(out, startRead{field: at("command"), path: s.fromCwd(s.Command)})
	} else if s.Command != "" {
		out = append(out, s.pathDirs(at("command"))...)
	}
	if i, script := s.script(); script != "" {
		out = append(out, startRead{field: index(at("args"), i), path: s.fromCwd(script)})
	}
	if s.Cwd != "" {
		out = append(out, startRead{field: at("cwd"), path: absPath(s.Cwd)})
	}
	return out
}

// fromCwd is path p taken from s's cwd (Warden's without one), absolute
// and cleaned.
func (s *Server) fromCwd(p string) string {
	if !filepath.IsAbs(p) && s.Cwd != "" {
		p = filepath.Join(s.Cwd, p)
	}
	return absPath(p)
}

// pathDirs are the directories of the PATH s gets, each searched for its
// command (field names it) or for what the command runs in turn (npx's
// "#!/usr/bin/env node" searches all of them). An empty entry is the
// current directory; a relative one is taken from s's cwd.
func (s *Server) pathDirs(field string) []startRead {
	path, ok := s.Env["PATH"]
	if !ok {
		path = os.Getenv("PATH")
	}
	var out []startRead
	for _, dir := range strings.Split(path, ":") {
		out = append(out, startRead{field: field, path: s.fromCwd(cmp.Or(dir, ".")), pathDir: s.Command})
	}
	return out
}

// script is the script an interpreter command of s runs and its index
// among s's args; "" when s's command is no interpreter or names none.
func (s *Server) script() (int, string) {
	name := filepath.Base(s.Command)
	if !slices.Contains(interpreters, name) || len(s.Args) == 0 {
		return 0, ""
	}
	i := 0
	if (name == "deno" || name == "bun") && s.Args[0] == "run" {
		for i = 1; i < len(s.Args) && strings.HasPrefix(s.Args[i], "-"); i++ {
		}
	}
	if i >= len(s.Args) || s.Args[i] == "" || strings.HasPrefix(s.Args[i], "-") {
		return 0, ""
	}
	return i, s.Args[i]
}

// RefuseCrossWrites leaves out each stdio server whose envFile, command
// (when a path) or cwd lies where another stdio server may write (see
// writablePlaces; stateDir is the state dir the servers' own directories
// are in): that server could change what the other runs, or its
// environment, at its next start. The entry goes to Broken with a message
// naming both servers, the path and the fix; the other servers load.
// Every stdio server counts as one that may write, disabled ones too: a
// disabled server has run, or will once enabled. What a server's own
// places hold is its own business: it may change its own environment,
// which it could already do from inside; but not through a link leading
// out of them (linkedEnvFile), which is refused the same way.
func (c *Config) RefuseCrossWrites(stateDir string) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n, s := range c.Servers {
			if s.Transport == TransportStdio && !yield(n) {
				return
			}
		}
	})
	places := make(map[string][]writable, len(names))
	for _, n := range names {
		places[n] = writablePlaces(c.Servers[n], stateDir)
	}
	refused, rp := map[string]*Error{}, newRealPaths()
	for _, b := range names {
		e := c.crossWrite(c.Servers[b], names, places, rp)
		if e == nil {
			e = c.linkedEnvFile(c.Servers[b], places[b], rp)
		}
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
// in a place another of the stdio servers names may write (places, by
// server); nil when none.
func (c *Config) crossWrite(b *Server, names []string, places map[string][]writable, rp *realPaths) *Error {
	for _, r := range readsAtStart(b) {
		for _, a := range names {
			if a == b.Name {
				continue
			}
			for _, w := range places[a] {
				if !rp.lies(r.path, w.dir) {
					continue
				}
				what, could, fix := r.path, "change what server "+strconv.Quote(b.Name)+" runs or its environment", "move it out of "+w.dir
				if r.pathDir != "" {
					what = fmt.Sprintf("PATH directory %s (searched for %q)", r.path, r.pathDir)
					could = fmt.Sprintf("put a program there that server %q runs instead of %q or of what it runs", b.Name, r.pathDir)
					fix = fmt.Sprintf("remove %s from PATH in server %q's \"env\"", r.path, b.Name)
				}
				if w.what == "its own directory" {
					fix += fmt.Sprintf(" (%s is server %q's own)", w.dir, a)
				} else {
					fix += fmt.Sprintf(", or narrow server %q's %s", a, strings.TrimPrefix(w.what, "its "))
				}
				return &Error{File: c.Path, Field: r.field,
					Problem: fmt.Sprintf("%s lies in %s, which server %q may write (%s): it could %s at its next start; server %q is not loaded",
						what, w.dir, a, w.what, could, b.Name),
					Fix: fix}
			}
		}
	}
	return nil
}

// linkedEnvFile is the problem of s's entry when its envFile lies in one
// of places, those s may write, and was read through a link that leads out of it: s
// could point the link at any file of the user's, hidden from it (another
// server's env file, a credential store), and have Warden read it into its
// environment. Links above the place, and within it, are no concern.
// Where the file was read from is what the kernel opened (readFile); when
// that, or the place's own path, cannot be told, the entry is refused too.
func (c *Config) linkedEnvFile(s *Server, places []writable, rp *realPaths) *Error {
	if s.EnvFile == "" {
		return nil
	}
	for _, w := range places {
		if !rp.lies(s.EnvFile, w.dir) {
			continue
		}
		place, opened := rp.of(w.dir), s.envFileOpened
		if place != "" && opened != "" && inside(opened, place) {
			continue
		}
		how, could, fix := "was read through a link that leads out of it (to "+opened+")", "the server could have",
			"replace the link by the file itself, or keep the env file where the server cannot write"
		if place == "" || opened == "" {
			how, could, fix = "Warden could not tell where it was read from (/proc/self/fd, or the place's own path)", "a link there could have had",
				"keep the env file where the server cannot write"
		}
		return &Error{File: c.Path, Field: join(join("mcpServers", s.Name), "envFile"),
			Problem: fmt.Sprintf("%s lies in %s, which server %q may write (%s), and %s: %s Warden read any of your files into its environment; server %q is not loaded",
				s.EnvFile, w.dir, s.Name, w.what, how, could, s.Name),
			Fix: fix}
	}
	return nil
}

// realPaths resolves paths' links, each once, for one RefuseCrossWrites:
// a path's own, and those of the directories on its way (ways).
type realPaths struct {
	real map[string]string
	ways map[string][]string
}

func newRealPaths() *realPaths {
	return &realPaths{real: map[string]string{}, ways: map[string][]string{}}
}

// of is p with its links resolved; "" when that cannot be told (p does
// not exist).
func (rp *realPaths) of(p string) string {
	r, ok := rp.real[p]
	if !ok {
		r, _ = filepath.EvalSymlinks(p)
		rp.real[p] = r
	}
	return r
}

// way is path and each directory on its way to the root, links resolved,
// leaving out those that cannot be told.
func (rp *realPaths) way(path string) []string {
	way, ok := rp.ways[path]
	if !ok {
		for p := path; ; p = filepath.Dir(p) {
			if r := rp.of(p); r != "" {
				way = append(way, r)
			}
			if p == filepath.Dir(p) {
				break
			}
		}
		rp.ways[path] = way
	}
	return way
}

// lies reports whether path lies in dir: as written, or through links,
// when path or a directory on its way, links resolved, lies in dir, links
// resolved (a place spelled another way, /home/u as /var/home/u).
func (rp *realPaths) lies(path, dir string) bool {
	if inside(path, dir) {
		return true
	}
	place := rp.of(dir)
	if place == "" {
		return false
	}
	for _, r := range rp.way(path) {
		if inside(r, place) {
			return true
		}
	}
	return false
}

// absPath is p made absolute against Warden's working directory, where
// the launcher takes a relative one from, and cleaned.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// inside reports whether path is dir or below it, by their text; both are
// absolute and clean (absPath), as every path here is.
func inside(path, dir string) bool {
	return strings.HasPrefix(path, dir) && (len(path) == len(dir) || dir == "/" || path[len(dir)] == '/')
}
