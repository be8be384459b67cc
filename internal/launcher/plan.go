package launcher

import (
	"errors"
	"strconv"
)

// Msg is one message on the control socket between Warden and the
// launcher. Warden sends "start" (with the server's stdin, stdout and
// stderr attached) and "signal"; the launcher answers each start with
// "started" or "failed", and says "exited" once a started server has.
// It sends "ready" once, when it is set up.
type Msg struct {
	Kind   string
	ID     uint64 // the server's, chosen by Warden
	Start  Start  // start
	Signal int    // signal: the signal for the server's process group
	Status int    // exited: the wait status
	Error  string // failed
}

// Start is one server to start and how to confine it. It holds the
// server's environment, secrets included: it only travels on the control
// socket, never in an environment or on a command line.
type Start struct {
	Argv, Env []string
	Dir       string   // working directory, entered through the new mounts
	Hide      []string // directories to cover with a read-only tmpfs, outermost first
	Expose    []string // paths under a Hide directory shown again in it (bind mounts)
	HideFiles []string // files to cover with /dev/null
	NoNetwork bool

	// What Landlock lets the server touch. BaseRead and Own are Warden's
	// choice (links followed, missing ones skipped); Read and Write are
	// the config's "sandbox.paths", resolved without following any link.
	Paths    bool     // reads only under the system dirs, Read, Write and Own, not BaseRead
	BaseRead []string // read and execute beneath, without Paths
	Own      []string // write beneath: the server's own places
	Read     []string
	Write    []string
}

// Plan is how the launcher sets itself up, read from its environment.
type Plan struct {
	Namespaces bool // it runs in its own user, mount and PID namespaces
}

// Encode is p as the value of Env.
func (p Plan) Encode() string {
	var w words
	w.flag(p.Namespaces, "ns")
	return w.String()
}

func decodePlan(s string) (Plan, error) {
	var p Plan
	err := decodeWords(s, func(name string, v *string) error {
		if name != "ns" || v != nil {
			return errors.New("unknown word " + strconv.Quote(name))
		}
		p.Namespaces = true
		return nil
	})
	return p, err
}

// Encode is m on the wire: its kind, then its fields.
func (m Msg) Encode() []byte {
	var w words
	w = append(w, m.Kind...)
	w = append(w, ' ')
	w.field("id", strconv.FormatUint(m.ID, 10))
	s := m.Start
	w.field("argv", s.Argv...)
	w.field("env", s.Env...)
	if s.Dir != "" {
		w.field("dir", s.Dir)
	}
	w.field("hide", s.Hide...)
	w.field("expose", s.Expose...)
	w.field("hideFile", s.HideFiles...)
	w.flag(s.NoNetwork, "noNetwork")
	w.flag(s.Paths, "paths")
	w.field("baseRead", s.BaseRead...)
	w.field("own", s.Own...)
	w.field("read", s.Read...)
	w.field("write", s.Write...)
	if m.Signal != 0 {
		w.field("signal", strconv.Itoa(m.Signal))
	}
	if m.Kind == "exited" {
		w.field("status", strconv.Itoa(m.Status))
	}
	if m.Error != "" {
		w.field("error", m.Error)
	}
	return []byte(w.String())
}

// DecodeMsg reads what Encode wrote.
func DecodeMsg(b []byte) (Msg, error) {
	var m Msg
	kind, rest, _ := cut(string(b), ' ')
	switch kind {
	case "start", "signal", "ready", "started", "failed", "exited":
		m.Kind = kind
	default:
		return m, errors.New("unknown message " + strconv.Quote(kind))
	}
	s := &m.Start
	lists := map[string]*[]string{"argv": &s.Argv, "env": &s.Env, "hide": &s.Hide, "expose": &s.Expose, "hideFile": &s.HideFiles,
		"baseRead": &s.BaseRead, "own": &s.Own, "read": &s.Read, "write": &s.Write}
	err := decodeWords(rest, func(name string, v *string) error {
		if l := lists[name]; l != nil && v != nil {
			*l = append(*l, *v)
			return nil
		}
		var err error
		switch {
		case name == "noNetwork" && v == nil:
			s.NoNetwork = true
		case name == "paths" && v == nil:
			s.Paths = true
		case v == nil:
			return errors.New(name + " needs a quoted string")
		case name == "id":
			m.ID, err = strconv.ParseUint(*v, 10, 64)
		case name == "dir":
			s.Dir = *v
		case name == "signal":
			m.Signal, err = strconv.Atoi(*v)
		case name == "status":
			m.Status, err = strconv.Atoi(*v)
		case name == "error":
			m.Error = *v
		default:
			return errors.New("unknown word " + strconv.Quote(name))
		}
		return err
	})
	return m, err
}

// words is the launcher's encoding: words separated by spaces, a flag
// alone ("ns") or a field's name and a Go-quoted string (`dir "/srv"`), a
// list one pair per item. Not JSON: encoding/json would make the launcher
// run later (see the package's doc).
type words []byte

func (w *words) flag(on bool, name string) {
	if on {
		*w = append(append(*w, name...), ' ')
	}
}

func (w *words) field(name string, values ...string) {
	for _, v := range values {
		*w = append(append(*w, name...), ' ')
		*w = append(strconv.AppendQuote(*w, v), ' ')
	}
}

func (w words) String() string {
	if len(w) > 0 {
		w = w[:len(w)-1]
	}
	return string(w)
}

// decodeWords calls f with each word and its quoted value, nil for a flag
// (a word followed by another word, or by nothing).
func decodeWords(s string, f func(name string, value *string) error) error {
	for len(s) > 0 {
		name, rest, _ := cut(s, ' ')
		if name == "" {
			return errors.New("an empty word")
		}
		s = rest
		if len(s) == 0 || s[0] != '"' {
			if err := f(name, nil); err != nil {
				return err
			}
			continue
		}
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return errors.New(name + ": " + err.Error())
		}
		v, _ := strconv.Unquote(q)
		s = s[len(q):]
		if len(s) > 0 {
			if s[0] != ' ' || len(s) == 1 {
				return errors.New("no word after " + q)
			}
			s = s[1:]
		}
		if err := f(name, &v); err != nil {
			return err
		}
	}
	return nil
}

// cut is strings.Cut for one byte (see the package's doc).
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
