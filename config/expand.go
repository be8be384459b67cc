package config

import (
	"os"
	"path/filepath"
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
	// hostPrefix matches the "input:" of ${input:id}, VS Code's and other
	// hosts' kinds of reference.
	hostPrefix = regexp.MustCompile(`^[A-Za-z]+:`)
)

// variablesFix lists the references Warden expands, for messages.
const variablesFix = "Warden expands ${env:NAME}, ${workspaceFolder}, ${workspaceFolderBasename}, ${userHome} and ${pathSeparator}"

// expansion is a string of the file with its ${...} references expanded.
type expansion struct {
	value string // every reference expanded: what Warden uses
	// written has the path variables expanded but ${env:} references kept:
	// what an edit writes to another file, where the workspace differs
	// and a secret must not be copied.
	written    string
	unresolved bool // lenient mode left an unset ${env:} reference in value
}

// expand replaces the references in s, in one pass (a value is never
// expanded again): ${env:NAME} with the variable's value when secrets is
// set (an error otherwise), and the path variables VS Code and Cursor
// document with this file's workspace folder, the home folder and the
// path separator. The value of a variable is a secret: messages name the
// variable, never its value. In lenient mode an unset variable is left as
// written and unresolved is true. Any other ${...} is an error naming it,
// since the host the file was written for would have expanded it.
func (d *decoder) expand(s string, v *hujson.Value, path string, secrets bool) (expansion, error) {
	if !strings.Contains(s, "${") {
		return expansion{value: s, written: s}, nil
	}
	var value, written strings.Builder
	var x expansion
	last := 0
	for _, m := range refPattern.FindAllStringSubmatchIndex(s, -1) {
		value.WriteString(s[last:m[0]])
		written.WriteString(s[last:m[0]])
		last = m[1]
		ref, inner := s[m[0]:m[1]], s[m[2]:m[3]]
		if name, isEnv := strings.CutPrefix(inner, "env:"); isEnv {
			val, ok, err := d.envRef(name, v, path, secrets)
			switch {
			case err != nil:
				return expansion{}, err
			case !ok:
				x.unresolved = true
				val = ref
			default:
				d.expanded = append(d.expanded, val)
			}
			value.WriteString(val)
			written.WriteString(ref)
			continue
		}
		val, err := d.pathVariable(inner, v, path)
		if err != nil {
			return expansion{}, err
		}
		value.WriteString(val)
		written.WriteString(val)
	}
	value.WriteString(s[last:])
	written.WriteString(s[last:])
	x.value, x.written = value.String(), written.String()
	return x, nil
}

// envRef looks up the variable of ${env:name}; ok is false when lenient
// mode leaves it unset.
func (d *decoder) envRef(name string, v *hujson.Value, path string, secrets bool) (val string, ok bool, err error) {
	switch {
	case !envName.MatchString(name):
		return "", false, d.errAt(v, path, "${env:"+name+"} does not name a variable",
			"write ${env:NAME} with a name of letters, digits and \"_\"")
	case !secrets:
		return "", false, d.errAt(v, path, "${env:"+name+"} is expanded only in args, env, url, headers, oauth, store and storeKey, not here",
			"pass the value to the server in \"args\" or \"env\" instead; for the home folder write ${userHome}")
	}
	val, ok = d.lookupEnv(name)
	if !ok && !d.lenient {
		return "", false, d.errAt(v, path, "${env:"+name+"} refers to "+name+", which is not set",
			"set "+name+" in the environment Warden runs in, or remove the reference")
	}
	return val, ok, nil
}

// pathVariable is the value of ${inner} other than ${env:...}: one of the
// path variables, or an error saying why it cannot be expanded.
func (d *decoder) pathVariable(inner string, v *hujson.Value, path string) (string, error) {
	switch inner {
	case "workspaceFolder", "workspaceFolderBasename":
		if d.workspace == "" {
			return "", d.errAt(v, path, "${"+inner+"} cannot be expanded: the config was not read from a file",
				"write the folder itself")
		}
		if inner == "workspaceFolder" {
			return d.workspace, nil
		}
		return filepath.Base(d.workspace), nil
	case "userHome":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", d.errAt(v, path, "${userHome} cannot be expanded: Warden's home folder is unknown ($HOME is not set)",
				"set HOME in the environment Warden runs in, or write the folder itself")
		}
		return home, nil
	case "pathSeparator", "/":
		return string(filepath.Separator), nil
	}
	switch {
	case strings.HasPrefix(inner, "input:"):
		return "", d.errAt(v, path, "${"+inner+"} asks VS Code to prompt for a value, which Warden cannot do",
			"write ${env:NAME} instead and set NAME in the environment Warden runs in")
	case shellStyle.MatchString(inner):
		n := shellStyle.FindStringSubmatch(inner)[1]
		return "", d.errAt(v, path, "${"+n+"...} is not expanded by Warden",
			"write ${env:"+n+"} to use the environment variable "+n+"; "+variablesFix)
	case hostPrefix.MatchString(inner):
		// Only the kind is quoted: what follows it could be anything.
		return "", d.errAt(v, path, "${"+hostPrefix.FindString(inner)+"...} is another host's kind of reference, which Warden cannot expand",
			variablesFix+"; write the value itself or one of those")
	}
	return "", d.errAt(v, path, "a ${...} reference here is not one Warden can expand", variablesFix+"; write the value itself or one of those")
}
