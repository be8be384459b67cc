package launcher

import (
	"errors"
	"strconv"
)

// Plan is what the launcher is told to do. It holds paths, never secrets.
type Plan struct {
	Namespaces bool // own user, mount and PID namespaces
	Hide       []string
	HideFiles  []string
	Dir        string
	NoNetwork  bool
	Paths      bool
	Read       []string
	Write      []string
	Probe      bool // set up, then exit 0
}

// Encode is p as the value of Env: words separated by spaces, a flag alone
// ("ns") or a field's name and a Go-quoted string (`hide "/state"`), a list
// one word pair per item. Not JSON: encoding/json would make the launcher
// run later (see the package's doc).
func (p Plan) Encode() string {
	var b []byte
	flag := func(on bool, name string) {
		if on {
			b = append(append(b, name...), ' ')
		}
	}
	field := func(name string, values ...string) {
		for _, v := range values {
			b = append(append(b, name...), ' ')
			b = append(strconv.AppendQuote(b, v), ' ')
		}
	}
	flag(p.Namespaces, "ns")
	field("hide", p.Hide...)
	field("hideFile", p.HideFiles...)
	if p.Dir != "" {
		field("dir", p.Dir)
	}
	flag(p.NoNetwork, "noNetwork")
	flag(p.Paths, "paths")
	field("read", p.Read...)
	field("write", p.Write...)
	flag(p.Probe, "probe")
	if len(b) > 0 {
		b = b[:len(b)-1]
	}
	return string(b)
}

// decodePlan reads what Encode wrote.
func decodePlan(s string) (Plan, error) {
	var p Plan
	for len(s) > 0 {
		word := s
		for i := 0; i < len(s); i++ {
			if s[i] == ' ' {
				word = s[:i]
				break
			}
		}
		s = s[len(word):]
		if len(s) > 0 {
			s = s[1:]
		}
		var list *[]string
		switch word {
		case "ns":
			p.Namespaces = true
			continue
		case "noNetwork":
			p.NoNetwork = true
			continue
		case "paths":
			p.Paths = true
			continue
		case "probe":
			p.Probe = true
			continue
		case "hide":
			list = &p.Hide
		case "hideFile":
			list = &p.HideFiles
		case "read":
			list = &p.Read
		case "write":
			list = &p.Write
		case "dir":
		default:
			return p, errors.New("unknown word " + strconv.Quote(word))
		}
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return p, errors.New(word + " needs a quoted string")
		}
		v, _ := strconv.Unquote(q)
		s = s[len(q):]
		if len(s) > 0 {
			if s[0] != ' ' {
				return p, errors.New("no space after " + q)
			}
			s = s[1:]
		}
		if list != nil {
			*list = append(*list, v)
		} else {
			p.Dir = v
		}
	}
	return p, nil
}
