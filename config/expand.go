package config

import (
	"regexp"
	"strings"

	"github.com/tailscale/hujson"
)

var (
	// refPattern matches one ${...} reference (no nested braces).
	refPattern = regexp.MustCompile(`\$\{([^{}]*)\}`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// shellStyle matches ${NAME} and ${NAME:-default}, which other hosts
	// expand but Warden does not: left alone they would be sent literally.
	shellStyle = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)(:?[-=?+].*)?$`)
)

// expand replaces each ${env:NAME} in s with the variable's value, in one
// pass (a value is never expanded again). The value of a variable is a
// secret: messages name the variable, never its value. In lenient mode an
// unset variable is left as written and unresolved is true. Other ${...}
// text is left alone, except the shell style ${NAME}, which is an error
// because the writer almost certainly meant ${env:NAME}.
func (d *decoder) expand(s string, v *hujson.Value, path string) (out string, unresolved bool, err error) {
	if !strings.Contains(s, "${") {
		return s, false, nil
	}
	var b strings.Builder
	last := 0
	for _, m := range refPattern.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		last = m[1]
		inner := s[m[2]:m[3]]
		name, isEnv := strings.CutPrefix(inner, "env:")
		switch {
		case isEnv && envName.MatchString(name):
			val, ok := d.lookupEnv(name)
			if !ok {
				if d.lenient {
					unresolved = true
					b.WriteString(s[m[0]:m[1]])
					continue
				}
				return "", false, d.errAt(v, path, "${env:"+name+"} refers to "+name+", which is not set",
					"set "+name+" in the environment Warden runs in, or remove the reference")
			}
			b.WriteString(val)
			d.expanded = append(d.expanded, val)
		case isEnv:
			return "", false, d.errAt(v, path, "${env:"+name+"} does not name a variable",
				"write ${env:NAME} with a name of letters, digits and \"_\"")
		case strings.HasPrefix(inner, "input:"):
			return "", false, d.errAt(v, path, "${"+inner+"} asks VS Code to prompt for a value, which Warden cannot do",
				"write ${env:NAME} instead and set NAME in the environment Warden runs in")
		case shellStyle.MatchString(inner):
			n := shellStyle.FindStringSubmatch(inner)[1]
			return "", false, d.errAt(v, path, "${"+n+"...} is not expanded by Warden",
				"write ${env:"+n+"} to use the environment variable "+n)
		default:
			b.WriteString(s[m[0]:m[1]])
		}
	}
	b.WriteString(s[last:])
	return b.String(), unresolved, nil
}
