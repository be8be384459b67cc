package approval

import (
	"fmt"
	"unicode/utf8"
)

// MaxNameLength is the longest tool name the MCP specification allows.
const MaxNameLength = 128

// NameProblem says why a tool name is outside the MCP specification's
// character set (1 to 128 of A-Z a-z 0-9 _ . -), or "" when it is inside.
// A tool so named is held as invalid: it can carry terminal controls,
// bidi overrides or look-alike letters that make a person approve something
// other than what they read, and no client needs such a name.
func NameProblem(name string) string {
	for i := 0; i < len(name); {
		c := name[i]
		if c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(name[i:])
		what := fmt.Sprintf("%U", r)
		if r == utf8.RuneError && size == 1 {
			what = fmt.Sprintf("the byte 0x%02x, not UTF-8,", c)
		}
		return fmt.Sprintf("the name contains %s at byte %d: MCP tool names are 1 to %d characters of A-Z a-z 0-9 _ . - only", what, i, MaxNameLength)
	}
	if name == "" {
		return "the name is empty: MCP tool names are 1 to 128 characters of A-Z a-z 0-9 _ . - only"
	}
	if len(name) > MaxNameLength {
		return fmt.Sprintf("the name is %d characters long: MCP tool names are 1 to %d characters of A-Z a-z 0-9 _ . - only", len(name), MaxNameLength)
	}
	return ""
}

// holdInvalid marks a record whose name is outside the character set as
// invalid, whatever its stored status (a store written before names were
// checked can hold one approved). It reports whether it did.
func holdInvalid(rec *ToolRecord) bool {
	why := NameProblem(rec.Name)
	if why == "" {
		return false
	}
	rec.Status, rec.Invalid = StatusInvalid, why
	rec.release()
	return true
}

// refuseInvalid fails when any of names is an invalid tool of s: it can be
// neither approved nor blocked (it is never listed or callable anyway), and
// a request naming it is a mistake worth saying. Caller holds s.mu.
func (s *server) refuseInvalid(action string, names []string) error {
	for _, n := range dedupe(names) {
		if rec := s.tools[n]; rec != nil && rec.Status == StatusInvalid {
			return invalid("tool %q of server %q cannot be %s: %s. Warden never lists or runs it; the server's author must rename it",
				n, s.name, action, rec.Invalid)
		}
	}
	return nil
}
