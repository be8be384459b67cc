package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// MaxTOMLSize bounds a TOML file (Codex's config.toml, a few KiB): the
// TOML decoder's cost grows with a dotted key's parts (a 4 MiB key of two
// million parts takes seconds and a gigabyte), so the file is kept small.
const MaxTOMLSize = 256 << 10

// decodeTOML decodes a TOML file into tables of map[string]any, refusing one
// larger than MaxTOMLSize or nested deeper than MaxDepth (tables, dotted
// keys, arrays and inline tables all count).
func decodeTOML(path string, data []byte) (map[string]any, error) {
	if len(data) > MaxTOMLSize {
		return nil, &Error{File: path, Problem: fmt.Sprintf("the file is larger than %d KiB, Warden's limit for a TOML file", MaxTOMLSize>>10),
			Fix: "a config holds servers, not data: remove what does not belong there"}
	}
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		e := &Error{File: path, Problem: "invalid TOML: " + strings.TrimPrefix(err.Error(), "toml: "), Fix: "fix the TOML syntax there"}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			e.Line, e.Column = de.Position()
		}
		return nil, e
	}
	if tooDeep(doc) {
		return nil, &Error{File: path, Problem: fmt.Sprintf("tables, keys and arrays are nested more than %d deep, Warden's limit for a config file", MaxDepth),
			Fix: "a config nests a few levels: remove the extra nesting"}
	}
	return doc, nil
}

// tooDeep reports whether v nests tables and arrays more than MaxDepth
// deep, walking it without recursion.
func tooDeep(v any) bool {
	type level struct {
		v     any
		depth int
	}
	stack := []level{{v, 0}}
	for len(stack) > 0 {
		l := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		var children []any
		switch x := l.v.(type) {
		case map[string]any:
			for _, c := range x {
				children = append(children, c)
			}
		case []any:
			children = x
		default:
			continue
		}
		if l.depth >= MaxDepth {
			return true
		}
		for _, c := range children {
			stack = append(stack, level{c, l.depth + 1})
		}
	}
	return false
}
