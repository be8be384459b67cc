package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tailscale/hujson"
)

// Field names, in the order messages list them.
var (
	topFields        = []string{"listen", "stateDir", "store", "storeKey", "activity", "tasks", "toolSearch", "toolSearchBudget", "mcpServers", "publicURL", "auth", "clients", "profiles", "access", "operators"}
	activityFields   = []string{"maxEntries", "maxAge"}
	tasksFields      = []string{"retention", "maxPerServer", "maxPerCaller"}
	toolSearchFields = []string{"mode", "rerank"}
	serverFields     = []string{"command", "args", "env", "cwd", "url", "headers", "transport", "type",
		"trusted", "disabled", "callTimeout", "confirmDestructive", "tools", "inheritEnv", "sandbox", "start", "idleTimeout", "oauth", "envFile", "tasks", "guardrails"}
	// Fields other MCP hosts write that Warden reads but does not offer
	// in messages (those it ignores are in foreignTop and foreignServer).
	hostTopFields    = []string{"servers"}
	hostServerFields = []string{"serverUrl", "transportType", "timeout", "disabledTools"}
	toolFields       = []string{"class", "hidden", "recordArgs"}
	sandboxFields    = []string{"network", "paths", "container"}
	guardrailsFields = []string{"secrets"}
	pathsFields      = []string{"read", "write"}
	containerFields  = []string{"image", "engine"}
	oauthFields      = []string{"clientId", "clientSecret", "clientMetadataUrl", "scopes"}
)

// transportNames maps the ways other MCP hosts spell a transport to
// Warden's names.
var transportNames = map[string]string{
	"streamable-http": TransportHTTP, "streamablehttp": TransportHTTP, "streamable_http": TransportHTTP,
}

// decoder walks the JSONC syntax tree directly (rather than going through
// encoding/json) so that every problem can name its field path and position,
// duplicate keys are caught, and values are checked in file order.
// A null value means "not set" everywhere.
type decoder struct {
	file      string
	data      []byte
	workspace string // what ${workspaceFolder} means, see workspaceOf
	lookupEnv func(string) (string, bool)
	lenient   bool     // leave unset ${env:} references unexpanded (editing)
	expanded  []string // secrets read so far: ${env:} values and envFile values
	// broken, when set, collects a server entry that cannot be loaded
	// instead of failing the whole file (ParseAll).
	broken map[string]*Error
	notes  []string // fields ignored, see foreignTop and foreignServer
	// ignored are a server entry's fields ignored with their notes:
	// foreignServer, or importedServer in a file being imported.
	ignored map[string]string
}

// newDecoder is the decoder of file's data.
func newDecoder(file string, data []byte, lookupEnv func(string) (string, bool), lenient bool) *decoder {
	return &decoder{file: file, data: data, workspace: workspaceOf(file), lookupEnv: lookupEnv, lenient: lenient, ignored: foreignServer}
}

// ignore notes that the field at v is another host's and ignored.
func (d *decoder) ignore(v *hujson.Value, path, note string) {
	line, _ := lineCol(d.data, v.StartOffset)
	d.notes = append(d.notes, fmt.Sprintf("config %s: %s (line %d): ignored: %s", d.file, path, line, note))
}

// serverFailed records the problem of one server entry: in ParseAll mode
// only that server is left out; otherwise the whole file fails.
func (d *decoder) serverFailed(name string, err error) error {
	var ce *Error
	if d.broken == nil || !errors.As(err, &ce) {
		return err
	}
	d.broken[name] = ce
	return nil
}

func (d *decoder) errAt(v *hujson.Value, field, problem, fix string) *Error {
	e := &Error{File: d.file, Field: field, Problem: problem, Fix: fix}
	if v != nil {
		e.Line, e.Column = lineCol(d.data, v.StartOffset)
	}
	return e
}

func lineCol(b []byte, off int) (line, col int) {
	off = min(max(off, 0), len(b))
	line = 1 + bytes.Count(b[:off], []byte("\n"))
	col = 1 + off - (bytes.LastIndexByte(b[:off], '\n') + 1)
	return line, col
}

func (d *decoder) decode(cfg *Config) error {
	root, err := hujson.Parse(d.data)
	if err != nil {
		return d.syntaxError(err)
	}
	obj, ok := root.Value.(*hujson.Object)
	if !ok {
		return d.errAt(&root, "", "the file holds "+kindName(&root)+", not an object",
			`write an object such as {"mcpServers": {}}`)
	}
	refs := &teamRefs{}
	err = d.hostFields(obj, "", topFields, hostTopFields, foreignTop, func(name string, v *hujson.Value, path string) error {
		switch name {
		case "publicURL":
			return d.publicURL(v, path, cfg)
		case "auth":
			return d.auth(v, path, cfg)
		case "clients":
			return d.clients(v, path, cfg, refs)
		case "profiles":
			return d.profiles(v, path, cfg)
		case "access":
			return d.access(v, path, cfg, refs)
		case "operators":
			return d.operators(v, path, cfg)
		case "listen":
			s, err := d.str(v, path)
			if err != nil {
				return err
			}
			if p := listenProblem(s, 1); p != "" {
				return d.errAt(v, path, p, `write host:port such as "127.0.0.1:7373"`)
			}
			cfg.Listen = s
		case "stateDir":
			s, err := d.str(v, path)
			if err != nil {
				return err
			}
			cfg.StateDir = resolveDir(s, d.file)
		case "store":
			x, err := d.secretStr(v, path)
			if err != nil {
				return err
			}
			if x != "" && !strings.HasPrefix(x, "postgres://") && !strings.HasPrefix(x, "postgresql://") {
				return d.errAt(v, path, "is not a postgres:// URL", `write "postgres://USER@HOST/DB" (a password as ${env:NAME}), or leave "store" out for the embedded store in the state dir`)
			}
			cfg.Store = x
		case "storeKey":
			x, err := d.secretStr(v, path)
			if err != nil {
				return err
			}
			cfg.StoreKey = x
		case "activity":
			return d.activity(v, path, &cfg.Activity)
		case "tasks":
			return d.tasks(v, path, &cfg.Tasks)
		case "toolSearch":
			return d.toolSearch(v, path, cfg)
		case "toolSearchBudget":
			n, ok := d.count(v)
			if !ok {
				return d.errAt(v, path, "is not a whole number of tokens above zero", "write a number such as 10000")
			}
			cfg.ToolSearchBudget = n
		case "mcpServers", "servers": // "servers" as VS Code writes it
			if other := map[string]string{"mcpServers": "servers", "servers": "mcpServers"}[name]; find(obj, other) >= 0 {
				return d.errAt(v, path, `the file has both "mcpServers" and "servers"`, `keep one, "mcpServers"`)
			}
			return d.servers(v, path, cfg.Servers)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := d.checkAuth(cfg, obj); err != nil {
		return err
	}
	return d.checkTeam(cfg, refs)
}

// syntaxError turns a hujson parse error into an *Error with line and
// column. It never quotes input text beyond a single character, since an
// unquoted word could be a pasted secret.
func (d *decoder) syntaxError(err error) error {
	e := &Error{File: d.file, Fix: "fix the JSON syntax there (comments and trailing commas are allowed)", err: err}
	fmt.Sscanf(err.Error(), "hujson: line %d, column %d:", &e.Line, &e.Column)
	inner := errors.Unwrap(err)
	if inner == nil {
		inner = err
	}
	msg := inner.Error()
	switch {
	case errors.Is(inner, io.ErrUnexpectedEOF):
		msg = "the file ends before the JSON does (an unclosed {, [ or string?)"
	case strings.HasPrefix(msg, "invalid literal"):
		msg = "a bare word that is not true, false, null or a number (strings need double quotes)"
	}
	e.Problem = "invalid JSON: " + msg
	return e
}

// fields calls fn for each non-null member of obj, rejecting duplicate and
// unknown names.
func (d *decoder) fields(obj *hujson.Object, path string, known []string, fn func(name string, v *hujson.Value, path string) error) error {
	return d.hostFields(obj, path, known, nil, nil, fn)
}

// hostFields is fields that also takes the names in host, without naming
// them in messages, and ignores those in foreign with their notes.
func (d *decoder) hostFields(obj *hujson.Object, path string, known, host []string, foreign map[string]string,
	fn func(name string, v *hujson.Value, path string) error) error {
	return d.each(obj, path, func(name string, m *hujson.ObjectMember, fp string) error {
		if note, ok := foreign[name]; ok {
			d.ignore(&m.Value, fp, note)
			return nil
		}
		if !slices.Contains(known, name) && !slices.Contains(host, name) {
			fix := "known fields are " + strings.Join(known, ", ")
			if s := suggest(name, known); s != "" {
				fix += fmt.Sprintf(" (did you mean %q?)", s)
			}
			return d.errAt(&m.Name, fp, "unknown field", fix)
		}
		return fn(name, &m.Value, fp)
	})
}

// each calls fn for each non-null member of obj, rejecting duplicate keys.
func (d *decoder) each(obj *hujson.Object, path string, fn func(key string, m *hujson.ObjectMember, path string) error) error {
	seen := make(map[string]bool, len(obj.Members))
	for i := range obj.Members {
		m := &obj.Members[i]
		key := m.Name.Value.(hujson.Literal).String()
		fp := join(path, key)
		if seen[key] {
			return d.errAt(&m.Name, fp, "appears twice in the same object", "keep one")
		}
		seen[key] = true
		if m.Value.Value.Kind() == 'n' {
			continue
		}
		if err := fn(key, m, fp); err != nil {
			return err
		}
	}
	return nil
}

func kindName(v *hujson.Value) string {
	switch v.Value.Kind() {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "a list"
	}
	return "a value"
}

func (d *decoder) typeErr(v *hujson.Value, path, want, fix string) error {
	return d.errAt(v, path, "is "+kindName(v)+", not "+want, fix)
}

func (d *decoder) object(v *hujson.Value, path, fix string) (*hujson.Object, error) {
	obj, ok := v.Value.(*hujson.Object)
	if !ok {
		return nil, d.typeErr(v, path, "an object", fix)
	}
	return obj, nil
}

func (d *decoder) str(v *hujson.Value, path string) (string, error) {
	lit, ok := v.Value.(hujson.Literal)
	if !ok || lit.Kind() != '"' {
		return "", d.typeErr(v, path, "a string", `write a string in double quotes`)
	}
	return lit.String(), nil
}

func (d *decoder) boolean(v *hujson.Value, path string) (bool, error) {
	lit, ok := v.Value.(hujson.Literal)
	if !ok || (lit.Kind() != 't' && lit.Kind() != 'f') {
		return false, d.typeErr(v, path, "true or false", "write true or false without quotes")
	}
	return lit.Bool(), nil
}

const durationFix = `write a Go duration such as "30s" or "2m"`

// duration reads a positive Go duration string.
func (d *decoder) duration(v *hujson.Value, path string) (time.Duration, error) {
	lit, ok := v.Value.(hujson.Literal)
	if !ok || lit.Kind() != '"' {
		return 0, d.typeErr(v, path, "a duration string", durationFix)
	}
	s := lit.String()
	dur, err := time.ParseDuration(s)
	if err != nil {
		return 0, d.errAt(v, path, strconv.Quote(s)+" is not a duration", durationFix)
	}
	if dur <= 0 {
		return 0, d.errAt(v, path, strconv.Quote(s)+" is not more than zero", durationFix)
	}
	return dur, nil
}

// seconds reads a positive number of seconds, as Cline writes "timeout".
func (d *decoder) seconds(v *hujson.Value, path string) (time.Duration, error) {
	lit, ok := v.Value.(hujson.Literal)
	if !ok || lit.Kind() != '0' {
		return 0, d.typeErr(v, path, "a number of seconds", `write seconds such as 60, or "callTimeout": "60s"`)
	}
	n, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || n <= 0 || n > 1e6 {
		return 0, d.errAt(v, path, "is not a number of seconds above zero", `write seconds such as 60, or "callTimeout": "60s"`)
	}
	return time.Duration(n * float64(time.Second)), nil
}

// strList reads a list of strings, expanding references in each (see
// expand); written is the list as an edit writes it back.
func (d *decoder) strList(v *hujson.Value, path string) (written, expanded []string, err error) {
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		return nil, nil, d.typeErr(v, path, "a list of strings", `write a list such as ["-y", "some-package"]`)
	}
	for i := range arr.Elements {
		e := &arr.Elements[i]
		p := index(path, i)
		s, err := d.str(e, p)
		if err != nil {
			return nil, nil, err
		}
		x, err := d.expand(s, e, p, true)
		if err != nil {
			return nil, nil, err
		}
		written = append(written, x.written)
		expanded = append(expanded, x.value)
	}
	return written, expanded, nil
}

// secretStr reads a string in which ${env:} references expand: a value
// that may hold a secret, never quoted in messages.
func (d *decoder) secretStr(v *hujson.Value, path string) (string, error) {
	s, err := d.str(v, path)
	if err != nil {
		return "", err
	}
	x, err := d.expand(s, v, path, true)
	return x.value, err
}

// pathStr reads a string in which the path variables expand but ${env:}
// references do not (a command, a directory, a file name).
func (d *decoder) pathStr(v *hujson.Value, path string) (string, error) {
	s, err := d.str(v, path)
	if err != nil {
		return "", err
	}
	x, err := d.expand(s, v, path, false)
	return x.value, err
}

// strMap reads an object of strings, expanding references in the values
// (see expand); written is the object as an edit writes it back.
// checkKey and checkValue return a problem or "".
func (d *decoder) strMap(v *hujson.Value, path string, checkKey func(string) (problem, fix string), checkValue func(string) string) (written, expanded map[string]string, err error) {
	obj, err := d.object(v, path, `write an object of strings such as {"NAME": "value"}`)
	if err != nil {
		return nil, nil, err
	}
	written, expanded = map[string]string{}, map[string]string{}
	err = d.each(obj, path, func(key string, m *hujson.ObjectMember, p string) error {
		if problem, fix := checkKey(key); problem != "" {
			return d.errAt(&m.Name, p, problem, fix)
		}
		s, err := d.str(&m.Value, p)
		if err != nil {
			return err
		}
		x, err := d.expand(s, &m.Value, p, true)
		if err != nil {
			return err
		}
		if problem := checkValue(x.value); problem != "" {
			// Never quote the value: it may be an expanded secret.
			return d.errAt(&m.Value, p, problem, "remove it from the value")
		}
		written[key], expanded[key] = x.written, x.value
		return nil
	})
	return written, expanded, err
}

// count reads a whole number from 1 to 2^31.
func (d *decoder) count(v *hujson.Value) (int, bool) {
	lit, ok := v.Value.(hujson.Literal)
	if !ok || lit.Kind() != '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil || n < 1 || n > 1<<31 {
		return 0, false
	}
	return int(n), true
}

func (d *decoder) activity(v *hujson.Value, path string, a *Activity) error {
	obj, err := d.object(v, path, `write an object such as {"maxEntries": 10000, "maxAge": "168h"}`)
	if err != nil {
		return err
	}
	return d.fields(obj, path, activityFields, func(name string, v *hujson.Value, p string) error {
		switch name {
		case "maxEntries":
			n, ok := d.count(v)
			if !ok {
				return d.errAt(v, p, "is not a whole number of entries above zero", "write a number such as 10000")
			}
			a.MaxEntries = n
		case "maxAge":
			dur, err := d.duration(v, p)
			if err != nil {
				return err
			}
			a.MaxAge = dur
		}
		return nil
	})
}

// toolSearch reads "toolSearch": a mode alone ("on"), or an object of the
// mode and how search_tools orders what it finds ({"mode": "on", "rerank":
// "sampling"}).
func (d *decoder) toolSearch(v *hujson.Value, path string, cfg *Config) error {
	mode := func(v *hujson.Value, path string) error {
		s, err := d.str(v, path)
		if err != nil {
			return err
		}
		if !slices.Contains([]string{ToolSearchOff, ToolSearchOn, ToolSearchAuto}, s) {
			return d.errAt(v, path, "is not a tool search mode", `write "off", "on" or "auto"`)
		}
		cfg.ToolSearch = s
		return nil
	}
	if v.Value.Kind() == '"' {
		return mode(v, path)
	}
	obj, err := d.object(v, path, `write "off", "on" or "auto", or an object such as {"mode": "on", "rerank": "sampling"}`)
	if err != nil {
		return err
	}
	return d.fields(obj, path, toolSearchFields, func(name string, v *hujson.Value, p string) error {
		if name == "mode" {
			return mode(v, p)
		}
		s, err := d.str(v, p)
		if err != nil {
			return err
		}
		switch s {
		case "", RerankNone:
			cfg.ToolSearchRerank = RerankNone
		case RerankSampling:
			cfg.ToolSearchRerank = RerankSampling
		default:
			return d.errAt(v, p, "is not a way to rerank", `write "none" (the index's order, the default) or "sampling" (the calling client's model orders the best candidates, when the client offers sampling)`)
		}
		return nil
	})
}

func (d *decoder) tasks(v *hujson.Value, path string, to *Tasks) error {
	obj, err := d.object(v, path, `write an object such as {"retention": "1h", "maxPerServer": 32, "maxPerCaller": 16}`)
	if err != nil {
		return err
	}
	return d.fields(obj, path, tasksFields, func(name string, v *hujson.Value, p string) error {
		switch name {
		case "retention":
			dur, err := d.duration(v, p)
			if err != nil {
				return err
			}
			to.Retention = dur
		case "maxPerServer", "maxPerCaller":
			n, ok := d.count(v)
			if !ok {
				return d.errAt(v, p, "is not a whole number of tasks above zero", "write a number such as 16")
			}
			if name == "maxPerServer" {
				to.MaxPerServer = n
			} else {
				to.MaxPerCaller = n
			}
		}
		return nil
	})
}

func (d *decoder) servers(v *hujson.Value, path string, into map[string]*Server) error {
	obj, err := d.object(v, path, `write an object of servers such as {"memory": {"command": "mcp-memory"}}`)
	if err != nil {
		return err
	}
	return d.each(obj, path, func(name string, m *hujson.ObjectMember, p string) error {
		if problem, fix := nameProblem(name); problem != "" {
			return d.serverFailed(name, d.errAt(&m.Name, p, problem, fix))
		}
		s, err := d.server(name, &m.Value, p)
		if err != nil {
			return d.serverFailed(name, err)
		}
		into[name] = s
		return nil
	})
}

func (d *decoder) server(name string, v *hujson.Value, path string) (*Server, error) {
	obj, err := d.object(v, path, `write an object such as {"command": "mcp-fs"} or {"url": "https://example.test/mcp"}`)
	if err != nil {
		return nil, err
	}
	s := &Server{Name: name, parsed: true, CallTimeout: DefaultCallTimeout, IdleTimeout: DefaultIdleTimeout}
	first := len(d.expanded)
	defer func() { s.expanded = slices.Clone(d.expanded[first:]) }()
	at := map[string]*hujson.Value{} // where each field was, for cross-field errors
	urlUnresolved := false
	var hidden []string // "disabledTools", applied once "tools" is read
	err = d.hostFields(obj, path, serverFields, hostServerFields, d.ignored, func(f string, v *hujson.Value, p string) (err error) {
		at[f] = v
		switch f {
		case "command":
			if s.Command, err = d.pathStr(v, p); err == nil && strings.TrimSpace(s.Command) == "" {
				err = d.errAt(v, p, "is empty", "write the program to run, such as \"npx\"")
			}
		case "args":
			s.rawArgs, s.Args, err = d.strList(v, p)
		case "env":
			s.rawEnv, s.Env, err = d.strMap(v, p, envKeyProblem, envValueProblem)
		case "cwd":
			s.Cwd, err = d.pathStr(v, p)
		case "envFile": // as VS Code and Cursor write it
			s.EnvFile, err = d.pathStr(v, p)
		case "url", "serverUrl": // "serverUrl" as Windsurf writes it
			if at["url"] != nil && at["serverUrl"] != nil {
				return d.errAt(v, p, `the server has both "url" and "serverUrl"`, `keep one, "url"`)
			}
			at["url"] = v
			var raw string
			if raw, err = d.str(v, p); err == nil {
				var x expansion
				x, err = d.expand(raw, v, p, true)
				s.rawURL, s.URL, urlUnresolved = x.written, x.value, x.unresolved
			}
		case "headers":
			s.rawHeaders, s.Headers, err = d.strMap(v, p, headerKeyProblem, headerValueProblem)
		case "transport", "type", "transportType": // "type" as Claude Code, VS Code and others write it, "transportType" as older Cline
			var t string
			if t, err = d.str(v, p); err != nil {
				return err
			}
			if canon, ok := transportNames[strings.ToLower(t)]; ok {
				t = canon
			}
			switch {
			case !slices.Contains(transports, t):
				err = d.errAt(v, p, strconv.Quote(t)+" is not a transport", `write "stdio", "http" or "sse"`)
			case s.Transport != "" && s.Transport != t:
				err = d.errAt(v, p, `says `+strconv.Quote(t)+` but "transport"/"type" also says `+strconv.Quote(s.Transport),
					`keep one of "transport" and "type"`)
			}
			s.Transport = t
		case "trusted":
			s.Trusted, err = d.boolean(v, p)
		case "disabled":
			s.Disabled, err = d.boolean(v, p)
		case "confirmDestructive":
			s.ConfirmDestructive, err = d.boolean(v, p)
		case "callTimeout":
			if at["timeout"] != nil {
				return d.errAt(v, p, `the server has both "callTimeout" and "timeout"`, `keep one, "callTimeout"`)
			}
			s.CallTimeout, err = d.duration(v, p)
		case "timeout": // Cline's: seconds
			if at["callTimeout"] != nil {
				return d.errAt(v, p, `the server has both "callTimeout" and "timeout"`, `keep one, "callTimeout"`)
			}
			s.CallTimeout, err = d.seconds(v, p)
		case "disabledTools": // as Windsurf, Roo Code and Kiro write it
			_, hidden, err = d.strList(v, p)
		case "tools":
			s.Tools, err = d.tools(v, p)
		case "inheritEnv":
			err = d.inheritEnv(v, p, s)
		case "sandbox":
			err = d.sandbox(v, p, &s.Sandbox)
		case "oauth":
			s.OAuth, s.rawOAuth, err = d.oauth(v, p)
		case "start":
			var mode string
			if mode, err = d.str(v, p); err == nil && mode != StartAlways && mode != StartOnDemand {
				err = d.errAt(v, p, strconv.Quote(mode)+" is not a start mode", `write "always" or "onDemand"`)
			}
			s.OnDemand = mode == StartOnDemand
		case "idleTimeout":
			s.IdleTimeout, err = d.duration(v, p)
		case "tasks":
			s.Tasks, err = d.taskTools(v, p)
		case "guardrails":
			err = d.guardrails(v, p, &s.Guardrails)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := d.checkServer(s, v, at, path, urlUnresolved); err != nil {
		return nil, err
	}
	if err := d.hideTools(s, hidden, at["disabledTools"], join(path, "disabledTools")); err != nil {
		return nil, err
	}
	if err := d.loadEnvFile(s, at["envFile"], join(path, "envFile")); err != nil {
		return nil, err
	}
	return s, nil
}

// guardrails reads a server's {"secrets": "block" | "allow"}.
func (d *decoder) guardrails(v *hujson.Value, path string, g *Guardrails) error {
	const fix = `write an object such as {"secrets": "allow"}`
	obj, err := d.object(v, path, fix)
	if err != nil {
		return err
	}
	return d.fields(obj, path, guardrailsFields, func(_ string, v *hujson.Value, p string) error {
		mode, err := d.str(v, p)
		if err == nil && mode != SecretsBlock && mode != SecretsAllow {
			err = d.errAt(v, p, strconv.Quote(mode)+" is not a choice of secrets", `write "block" (the default: a call carrying a credential is refused) or "allow"`)
		}
		g.AllowSecrets = mode == SecretsAllow
		return err
	})
}

// taskTools reads a server's "tasks": "all", or a list of tool names.
func (d *decoder) taskTools(v *hujson.Value, path string) (TaskTools, error) {
	const fix = `write "all", or a list of the upstream's tool names such as ["build", "deploy"]`
	if lit, ok := v.Value.(hujson.Literal); ok && lit.Kind() == '"' {
		if lit.String() != "all" {
			return TaskTools{}, d.errAt(v, path, strconv.Quote(lit.String())+" is not a choice of tasks", fix)
		}
		return TaskTools{All: true}, nil
	}
	if _, ok := v.Value.(*hujson.Array); !ok {
		return TaskTools{}, d.typeErr(v, path, `"all" or a list of tool names`, fix)
	}
	_, names, err := d.strList(v, path)
	if err != nil {
		return TaskTools{}, err
	}
	for i, name := range names {
		if name == "" {
			return TaskTools{}, d.errAt(v, index(path, i), "tool name is empty", "write the upstream tool's name")
		}
	}
	return TaskTools{Names: names}, nil
}

// hideTools hides the tools another host's "disabledTools" names, as that
// host would: a tool its person turned off stays off behind Warden.
func (d *decoder) hideTools(s *Server, names []string, v *hujson.Value, path string) error {
	for i, name := range names {
		if name == "" {
			return d.errAt(v, index(path, i), "tool name is empty", "write the upstream tool's name")
		}
		if s.Tools == nil {
			s.Tools = map[string]ToolOverride{}
		}
		t := s.Tools[name]
		t.Hidden = true
		s.Tools[name] = t
	}
	return nil
}

func (d *decoder) tools(v *hujson.Value, path string) (map[string]ToolOverride, error) {
	obj, err := d.object(v, path, `write an object such as {"read_file": {"class": "read"}}`)
	if err != nil {
		return nil, err
	}
	tools := map[string]ToolOverride{}
	err = d.each(obj, path, func(name string, m *hujson.ObjectMember, p string) error {
		if name == "" {
			return d.errAt(&m.Name, p, "tool name is empty", "write the upstream tool's name")
		}
		tobj, err := d.object(&m.Value, p, `write an object such as {"class": "read"} or {"hidden": true}`)
		if err != nil {
			return err
		}
		var t ToolOverride
		err = d.fields(tobj, p, toolFields, func(f string, v *hujson.Value, fp string) (err error) {
			switch f {
			case "class":
				if t.Class, err = d.str(v, fp); err == nil && !slices.Contains(classes, t.Class) {
					err = d.errAt(v, fp, strconv.Quote(t.Class)+" is not a class", `write "read", "write" or "destructive"`)
				}
			case "hidden":
				t.Hidden, err = d.boolean(v, fp)
			case "recordArgs":
				t.RecordArgs, err = d.boolean(v, fp)
			}
			return err
		})
		tools[name] = t
		return err
	})
	return tools, err
}

// oauth reads {"clientId": ..., "clientSecret": ..., "clientMetadataUrl": ..., "scopes": [...]},
// expanding ${env:} references in the strings; written is o as an edit
// writes it back, with the references kept.
func (d *decoder) oauth(v *hujson.Value, path string) (o, written *OAuth, err error) {
	obj, err := d.object(v, path, `write an object such as {"clientId": "my-client", "clientSecret": "${env:CLIENT_SECRET}"}`)
	if err != nil {
		return nil, nil, err
	}
	o, written = &OAuth{}, &OAuth{}
	err = d.fields(obj, path, oauthFields, func(f string, v *hujson.Value, p string) error {
		if f == "scopes" {
			_, scopes, err := d.strList(v, p)
			o.Scopes, written.Scopes = scopes, scopes
			return err
		}
		raw, err := d.str(v, p)
		if err != nil {
			return err
		}
		x, err := d.expand(raw, v, p, true)
		if err != nil {
			return err
		}
		switch f {
		case "clientId":
			o.ClientID, written.ClientID = x.value, x.written
		case "clientSecret":
			o.ClientSecret, written.ClientSecret = x.value, x.written
		case "clientMetadataUrl":
			if u, perr := url.Parse(x.value); perr != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
				return d.errAt(v, p, "is not an https URL with a path", `write the URL of the client ID metadata document, such as "https://example.test/warden-client.json"`)
			}
			o.ClientMetadataURL, written.ClientMetadataURL = x.value, x.written
		}
		return nil
	})
	if err == nil && o.ClientSecret != "" && o.ClientID == "" {
		err = d.errAt(v, path, `has "clientSecret" but no "clientId"`, `add the "clientId" the secret belongs to`)
	}
	return o, written, err
}

// inheritEnv reads true, false or a list of variable names.
func (d *decoder) inheritEnv(v *hujson.Value, path string, s *Server) error {
	if lit, ok := v.Value.(hujson.Literal); ok && (lit.Kind() == 't' || lit.Kind() == 'f') {
		s.InheritAllEnv = lit.Bool()
		return nil
	}
	arr, ok := v.Value.(*hujson.Array)
	if !ok {
		return d.typeErr(v, path, "a list of names or true", `write a list such as ["AWS_PROFILE"], or true to pass Warden's whole environment`)
	}
	for i := range arr.Elements {
		e := &arr.Elements[i]
		name, err := d.str(e, index(path, i))
		if err != nil {
			return err
		}
		if problem, fix := envKeyProblem(name); problem != "" {
			return d.errAt(e, index(path, i), problem, fix)
		}
		s.InheritEnv = append(s.InheritEnv, name)
	}
	return nil
}

// sandbox reads {"network": false, "paths": {"read": [...], "write": [...]}}.
func (d *decoder) sandbox(v *hujson.Value, path string, sb *Sandbox) error {
	obj, err := d.object(v, path, `write an object such as {"network": false, "paths": {"read": ["/data"]}}`)
	if err != nil {
		return err
	}
	return d.fields(obj, path, sandboxFields, func(f string, v *hujson.Value, p string) error {
		switch f {
		case "network":
			net, err := d.boolean(v, p)
			sb.NoNetwork = !net
			return err
		case "container":
			cobj, err := d.object(v, p, `write an object such as {"image": "node:22-slim"}`)
			if err != nil {
				return err
			}
			if err := d.fields(cobj, p, containerFields, func(f string, v *hujson.Value, fp string) (err error) {
				switch f {
				case "image":
					sb.Image, err = d.str(v, fp)
				case "engine":
					if sb.Engine, err = d.str(v, fp); err == nil && sb.Engine != "docker" && sb.Engine != "podman" {
						err = d.errAt(v, fp, strconv.Quote(sb.Engine)+" is not a container engine", `write "docker" or "podman", or leave it out for whichever is installed`)
					}
				}
				return err
			}); err != nil {
				return err
			}
			if strings.TrimSpace(sb.Image) == "" {
				return d.errAt(v, p, `has no "image"`, `write the image to run the command in, such as {"image": "node:22-slim"}`)
			}
			return nil
		case "paths":
			pobj, err := d.object(v, p, `write an object such as {"read": ["/data"], "write": ["/tmp/out"]}`)
			if err != nil {
				return err
			}
			sb.Paths = true
			return d.fields(pobj, p, pathsFields, func(f string, v *hujson.Value, fp string) error {
				_, list, err := d.strList(v, fp)
				for i, dir := range list {
					if dir == "" {
						return d.errAt(v, index(fp, i), "is empty", "write an absolute path, or one starting with ~/")
					}
					list[i] = resolveDir(dir, d.file)
				}
				if f == "read" {
					sb.Read = list
				} else {
					sb.Write = list
				}
				return err
			})
		}
		return nil
	})
}

// resolveDir expands a leading "~/" and makes a relative directory relative
// to the config file's directory, which is what a person writing a
// relative path in a file means.
func resolveDir(dir, file string) string {
	if dir == "" {
		return ""
	}
	if dir == "~" || strings.HasPrefix(dir, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			dir = filepath.Join(home, dir[1:])
		}
	}
	if !filepath.IsAbs(dir) && file != "" {
		dir = filepath.Join(filepath.Dir(file), dir)
	}
	return filepath.Clean(dir)
}
