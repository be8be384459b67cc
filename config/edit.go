package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/tailscale/hujson"
)

// ErrServerExists is AddServer's error for a name already in the file.
var ErrServerExists = errors.New("server exists")

// AddServer adds server s under "mcpServers" as name (s.Name is ignored),
// changing nothing else in the file: comments, trailing commas, indentation
// and line endings stay as they were, and the new entry is indented like its
// neighbours. A missing file (and its directory) is created, mode 0600.
//
// Fields are written as given, except that for a Server that came from
// Parse the url, args, env and headers are written as they were before
// ${env:} expansion, so secrets are not copied into the file. Transport is
// written only when it differs from what Warden would infer, callTimeout
// only when it is not the default.
//
// It fails, writing nothing, when name is invalid or taken, or when the
// resulting file does not parse. That check does not require the ${env:}
// variables to be set, since the daemon's environment may differ from the
// caller's. The file is replaced atomically (temporary file and rename)
// keeping its mode; a symlink is followed and its target replaced.
func AddServer(path, name string, s *Server) error {
	return AddServers(path, []string{name}, []*Server{s})
}

// AddServers adds servers[i] as names[i], in one edit, as AddServer does
// for one: when any of them cannot be added, nothing is written.
func AddServers(path string, names []string, servers []*Server) error {
	for i, name := range names {
		field := join("mcpServers", name)
		if p, fix := nameProblem(name); p != "" {
			return &Error{File: path, Field: field, Problem: p, Fix: fix}
		}
		if servers[i] == nil {
			return &Error{File: path, Field: field, Problem: "no server given"}
		}
	}
	return edit(path, true, func(e *editor) error {
		e.added = names
		obj, err := e.servers(e.serversKey(), true)
		if err != nil {
			return err
		}
		for i, name := range names {
			if find(obj, name) >= 0 {
				return &Error{File: path, Field: join("mcpServers", name), Problem: "a server with this name already exists",
					Fix: "choose another name, or remove it first with: warden servers remove " + name, err: ErrServerExists}
			}
			val, err := hujson.Parse([]byte(e.encodeServer(servers[i], e.indentOf(obj, e.serversIndent()))))
			if err != nil { // cannot happen: we wrote it
				return err
			}
			e.appendMember(obj, e.serversIndent(), name, val.Value)
		}
		return nil
	})
}

// RemoveServer removes server name from "mcpServers" with the same
// guarantees as AddServer. Comments around the entry are kept; those inside
// it go with it. It fails, naming the known servers, when there is no such
// server.
func RemoveServer(path, name string) error {
	return edit(path, true, func(e *editor) error {
		servers, err := e.servers(e.serversKey(), false)
		if err != nil {
			return err
		}
		k := -1
		if servers != nil {
			k = find(servers, name)
		}
		if k < 0 {
			fix := "the file has no servers"
			if servers != nil && len(servers.Members) > 0 {
				var names []string
				for _, m := range servers.Members {
					names = append(names, m.Name.Value.(hujson.Literal).String())
				}
				fix = "known servers are " + strings.Join(names, ", ")
			}
			return &Error{File: path, Field: join("mcpServers", name), Problem: "no such server", Fix: fix}
		}
		e.removeMember(servers, k)
		return nil
	})
}

// AddHostEntry adds entry as name under the object key (created when
// missing) of another MCP host's config file, keeping the rest of the file
// as AddServer does. The file is not checked as a Warden config, only as
// JSON with comments. It fails with ErrServerExists when name is taken.
func AddHostEntry(path, key, name string, entry any) error {
	return edit(path, false, func(e *editor) error {
		obj, err := e.servers(key, true)
		if err != nil {
			return err
		}
		if find(obj, name) >= 0 {
			return &Error{File: path, Field: join(key, name), Problem: "already exists", err: ErrServerExists,
				Fix: "remove or rename it in " + path + " first"}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent(e.indentOf(obj, e.serversIndent()), e.unit)
		if err := enc.Encode(entry); err != nil {
			return err
		}
		val, err := hujson.Parse(b.Bytes())
		if err != nil {
			return err
		}
		e.appendMember(obj, e.serversIndent(), name, val.Value)
		return nil
	})
}

// editor changes a parsed file in place.
type editor struct {
	file  string
	root  *hujson.Object
	nl    string   // line ending used by the file
	unit  string   // one level of indentation used by the file
	added []string // the servers AddServers adds, which must load
}

// serversKey is the key of the file's servers map: VS Code's "servers"
// in a file that has it and no "mcpServers".
func (e *editor) serversKey() string {
	if find(e.root, "mcpServers") < 0 && find(e.root, "servers") >= 0 {
		return "servers"
	}
	return "mcpServers"
}

// edit changes the file at path, checking the result as a Warden config
// when warden is set, else only as JSON with comments.
func edit(path string, warden bool, change func(*editor) error) error {
	if path == "" {
		path = DefaultPath()
	}
	target := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		target = real
	} else if link, err := os.Readlink(path); err == nil { // dangling: create what it points to
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		target = link
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return &Error{File: path, Problem: "cannot create its directory: " + pathErr(err), err: err}
	}
	// One edit at a time: two commands editing at once would each write
	// back what they read, and one's change would be lost.
	unlock, err := lockDir(filepath.Dir(target))
	if err != nil {
		return &Error{File: path, Problem: "cannot lock its directory for the edit: " + pathErr(err), Fix: "check the directory's permissions", err: err}
	}
	defer unlock()
	var old fs.FileInfo // nil when the file is new
	data, err := ReadFile(target)
	var ce *Error
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.As(err, &ce):
		ce.File = path // as the caller named it
		return ce
	case err != nil:
		return &Error{File: path, Problem: "cannot read the file: " + pathErr(err), Fix: "check that it is a readable file", err: err}
	default:
		if old, err = os.Stat(target); err != nil {
			return &Error{File: path, Problem: "cannot read the file: " + pathErr(err), Fix: "check that it is a readable file", err: err}
		}
	}
	bom := bytes.HasPrefix(data, utf8BOM)
	data = bytes.TrimPrefix(data, utf8BOM)
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	if err := CheckBounds(path, data); err != nil {
		return err
	}
	root, err := hujson.Parse(data)
	if err != nil {
		return (&decoder{file: path, data: data}).syntaxError(err)
	}
	obj, ok := root.Value.(*hujson.Object)
	if !ok {
		return &Error{File: path, Problem: "the file holds " + kindName(&root) + ", not an object",
			Fix: `write an object such as {"mcpServers": {}}`}
	}
	e := &editor{file: path, root: obj, nl: "\n", unit: "  "}
	if bytes.Contains(data, []byte("\r\n")) {
		e.nl = "\r\n"
	}
	if len(obj.Members) > 0 {
		if ind, ok := lineIndent(obj.Members[0].Name.BeforeExtra); ok && ind != "" {
			e.unit = ind
		}
	}
	if err := change(e); err != nil {
		return err
	}
	out := root.Pack()
	if warden {
		// Other entries that cannot be loaded are not this edit's doing:
		// they stay as they were, and only the added one must load.
		cfg, err := parse(path, out, os.LookupEnv, true, true)
		if err != nil {
			return err
		}
		for _, name := range e.added {
			if err := cfg.Broken[name]; err != nil {
				return err
			}
		}
	} else if _, err := hujson.Parse(out); err != nil {
		return err
	}
	if bom {
		out = append(slices.Clip(utf8BOM), out...)
	}
	if err := writeAtomic(target, out, old); err != nil {
		return &Error{File: path, Problem: "cannot write the file: " + pathErr(err),
			Fix: "check that the disk has space and the directory is writable; the file is unchanged", err: err}
	}
	return nil
}

// lockDir takes an exclusive lock on dir until unlock is called.
func lockDir(dir string) (unlock func(), err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		d.Close()
		return nil, &fs.PathError{Op: "flock", Path: dir, Err: err}
	}
	return func() { d.Close() }, nil // closing releases the lock
}

// servers returns the object under key ("mcpServers"), creating it when
// create is set; nil when absent and not created.
func (e *editor) servers(key string, create bool) (*hujson.Object, error) {
	k := find(e.root, key)
	if k < 0 {
		if !create {
			return nil, nil
		}
		obj := &hujson.Object{}
		e.appendMember(e.root, "", key, obj)
		return obj, nil
	}
	v := &e.root.Members[k].Value
	switch x := v.Value.(type) {
	case *hujson.Object:
		return x, nil
	case hujson.Literal:
		if x.Kind() == 'n' {
			if !create {
				return nil, nil
			}
			obj := &hujson.Object{}
			v.Value = obj
			return obj, nil
		}
	}
	return nil, &Error{File: e.file, Field: key, Problem: "is " + kindName(v) + ", not an object",
		Fix: `write an object of servers such as {"memory": {"command": "mcp-memory"}}`}
}

// serversIndent is the indentation of the top-level members.
func (e *editor) serversIndent() string { return e.indentOf(e.root, "") }

// indentOf is the indentation of obj's members: that of its first member
// when it starts a line, else one unit more than the object's own.
func (e *editor) indentOf(obj *hujson.Object, objIndent string) string {
	if len(obj.Members) > 0 {
		if ind, ok := lineIndent(obj.Members[0].Name.BeforeExtra); ok {
			return ind
		}
	}
	return objIndent + e.unit
}

// lineIndent returns what follows the last line break in extra, if any.
func lineIndent(extra []byte) (string, bool) {
	i := bytes.LastIndexByte(extra, '\n')
	if i < 0 {
		return "", false
	}
	rest := extra[i+1:]
	return string(rest[:len(rest)-len(bytes.TrimLeft(rest, " \t"))]), true
}

func find(obj *hujson.Object, name string) int {
	for i, m := range obj.Members {
		if m.Name.Value.(hujson.Literal).String() == name {
			return i
		}
	}
	return -1
}

// appendMember adds key: value as the last member of obj on its own line,
// keeping the object's trailing-comma style and any comment after the
// previous last member where it was.
func (e *editor) appendMember(obj *hujson.Object, objIndent, key string, value hujson.ValueTrimmed) {
	ind := e.indentOf(obj, objIndent)
	trailing := len(obj.Members) > 0 && obj.Members[len(obj.Members)-1].Value.AfterExtra != nil
	lead, closing := obj.AfterExtra, []byte(objIndent)
	if i := bytes.LastIndexByte(lead, '\n'); i >= 0 {
		lead, closing = bytes.TrimSuffix(lead[:i], []byte("\r")), lead[i+1:]
	}
	m := hujson.ObjectMember{
		Name:  hujson.Value{BeforeExtra: cat(lead, e.nl, ind), Value: hujson.String(key)},
		Value: hujson.Value{BeforeExtra: []byte(" "), Value: value},
	}
	if trailing {
		m.Value.AfterExtra = []byte{}
	}
	obj.Members = append(obj.Members, m)
	obj.AfterExtra = cat(nil, e.nl, string(closing))
}

// removeMember deletes obj.Members[k], keeping the comments before it and
// the object's trailing-comma style.
func (e *editor) removeMember(obj *hujson.Object, k int) {
	n := len(obj.Members)
	lead := obj.Members[k].Name.BeforeExtra
	trailing := obj.Members[n-1].Value.AfterExtra != nil
	obj.Members = slices.Delete(obj.Members, k, k+1)
	if k < n-1 {
		next := &obj.Members[k].Name
		next.BeforeExtra = e.keepComments(lead, next.BeforeExtra)
		return
	}
	if k > 0 {
		prev := &obj.Members[k-1].Value
		switch {
		case trailing && prev.AfterExtra == nil:
			prev.AfterExtra = []byte{}
		case !trailing && prev.AfterExtra != nil:
			lead = cat(prev.AfterExtra, string(lead))
			prev.AfterExtra = nil
		}
	}
	obj.AfterExtra = e.keepComments(lead, obj.AfterExtra)
	if len(obj.Members) == 0 && !hasComment(obj.AfterExtra) {
		obj.AfterExtra = nil
	}
}

// keepComments joins the extras that surrounded a removed member: lead
// (after the previous comma) and rest (after its own comma, or before the
// closing brace). Whitespace goes; comments stay. A comment that sat on the
// removed member's line moves to a line of its own at its indentation.
func (e *editor) keepComments(lead, rest []byte) []byte {
	sameLine := rest[:len(rest)-len(bytes.TrimLeft(rest, " \t"))]
	after := rest[len(sameLine):]
	restHead := len(after) > 0 && after[0] == '/'
	if !hasComment(lead) && !restHead {
		return rest
	}
	var out []byte
	if hasComment(lead) {
		out = bytes.TrimRight(lead, " \t\r\n")
	}
	ind, hasLine := lineIndent(lead)
	lastLine := out[bytes.LastIndexByte(out, '\n')+1:]
	needBreak := bytes.Contains(lastLine, []byte("//")) && !bytes.HasPrefix(after, []byte("\n")) && !bytes.HasPrefix(after, []byte("\r\n"))
	switch {
	case restHead && hasLine, needBreak:
		return cat(out, e.nl, ind, string(after))
	case restHead:
		return cat(out, " ", string(after))
	}
	return cat(out, string(rest))
}

// hasComment reports whether extra (whitespace and comments) has a comment.
func hasComment(extra []byte) bool { return bytes.IndexByte(extra, '/') >= 0 }

func cat(b []byte, s ...string) []byte {
	out := slices.Clone(b)
	for _, x := range s {
		out = append(out, x...)
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// encodeServer writes s as a JSON object for a member indented by ind:
// one field per line, lists on one line, maps one entry per line.
func (e *editor) encodeServer(s *Server, ind string) string {
	url, args, env, headers := s.written()
	in1, in2 := ind+e.unit, ind+e.unit+e.unit
	var lines []string
	add := func(k, v string) { lines = append(lines, in1+quote(k)+": "+v) }
	strMap := func(m map[string]string) string {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			ls = append(ls, in2+quote(k)+": "+quote(m[k]))
		}
		return "{" + e.nl + strings.Join(ls, ","+e.nl) + e.nl + in1 + "}"
	}
	if s.Command != "" {
		add("command", quote(s.Command))
	}
	if len(args) > 0 {
		add("args", quoteList(args))
	}
	if len(env) > 0 {
		add("env", strMap(env))
	}
	if s.EnvFile != "" {
		add("envFile", quote(s.EnvFile))
	}
	if s.Cwd != "" {
		add("cwd", quote(s.Cwd))
	}
	if s.InheritAllEnv {
		add("inheritEnv", "true")
	} else if len(s.InheritEnv) > 0 {
		add("inheritEnv", quoteList(s.InheritEnv))
	}
	if url != "" {
		add("url", quote(url))
	}
	if len(headers) > 0 {
		add("headers", strMap(headers))
	}
	if oauth := s.writtenOAuth(); oauth != nil {
		var fs []string
		for _, f := range [][2]string{{"clientId", oauth.ClientID}, {"clientSecret", oauth.ClientSecret}, {"clientMetadataUrl", oauth.ClientMetadataURL}} {
			if f[1] != "" {
				fs = append(fs, quote(f[0])+": "+quote(f[1]))
			}
		}
		if oauth.Scopes != nil {
			fs = append(fs, `"scopes": `+quoteList(oauth.Scopes))
		}
		add("oauth", "{"+strings.Join(fs, ", ")+"}")
	}
	inferred := TransportStdio
	if s.Command == "" {
		inferred = inferTransport(url)
	}
	if s.Transport != "" && s.Transport != inferred {
		add("transport", quote(s.Transport))
	}
	for _, f := range []struct {
		k string
		v bool
	}{{"trusted", s.Trusted}, {"disabled", s.Disabled}, {"confirmDestructive", s.ConfirmDestructive}} {
		if f.v {
			add(f.k, "true")
		}
	}
	if s.CallTimeout != 0 && s.CallTimeout != DefaultCallTimeout {
		add("callTimeout", quote(s.CallTimeout.String()))
	}
	switch {
	case s.Tasks.All:
		add("tasks", quote("all"))
	case len(s.Tasks.Names) > 0:
		add("tasks", quoteList(s.Tasks.Names))
	}
	if s.Guardrails.AllowSecrets {
		add("guardrails", `{"secrets": "allow"}`)
	}
	if sb := s.Sandbox; sb.Paths || sb.NoNetwork {
		var fs []string
		if sb.NoNetwork {
			fs = append(fs, `"network": false`)
		}
		if sb.Paths {
			var ps []string
			if len(sb.Read) > 0 {
				ps = append(ps, `"read": `+quoteList(sb.Read))
			}
			if len(sb.Write) > 0 {
				ps = append(ps, `"write": `+quoteList(sb.Write))
			}
			fs = append(fs, `"paths": {`+strings.Join(ps, ", ")+"}")
		}
		add("sandbox", "{"+strings.Join(fs, ", ")+"}")
	}
	if s.OnDemand {
		add("start", quote(StartOnDemand))
		if s.IdleTimeout != 0 && s.IdleTimeout != DefaultIdleTimeout {
			add("idleTimeout", quote(s.IdleTimeout.String()))
		}
	}
	if len(s.Tools) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(s.Tools)) {
			t := s.Tools[k]
			var fs []string
			if t.Class != "" {
				fs = append(fs, `"class": `+quote(t.Class))
			}
			if t.Hidden {
				fs = append(fs, `"hidden": true`)
			}
			if t.RecordArgs {
				fs = append(fs, `"recordArgs": true`)
			}
			ls = append(ls, in2+quote(k)+": {"+strings.Join(fs, ", ")+"}")
		}
		add("tools", "{"+e.nl+strings.Join(ls, ","+e.nl)+e.nl+in1+"}")
	}
	if len(lines) == 0 {
		return "{}"
	}
	return "{" + e.nl + strings.Join(lines, ","+e.nl) + e.nl + ind + "}"
}

// quoteList writes l as a JSON list on one line.
func quoteList(l []string) string {
	q := make([]string, len(l))
	for i, a := range l {
		q[i] = quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// quote writes s as a JSON string, leaving <, > and & readable.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// writeAtomic replaces path with data so that readers (and the watching
// daemon) see either the old file or the new one, never a partial one. The
// new file keeps old's mode and, where allowed, its owner; a file that did
// not exist (old nil) is made 0600.
func writeAtomic(path string, data []byte, old fs.FileInfo) error {
	mode := fs.FileMode(0o600)
	if old != nil {
		mode = old.Mode().Perm()
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if st, ok := statOwner(old); ok {
		_ = f.Chown(int(st.Uid), int(st.Gid)) // best effort: only root may give a file away
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil { // persist the rename; best effort
		d.Sync()
		d.Close()
	}
	return nil
}

func statOwner(fi fs.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// pathErr is an error's message without the path an *fs.PathError repeats.
func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
