package config

import (
	"fmt"
	"strconv"
	"strings"
)

// parseTOML reads the part of TOML that MCP hosts' config files use:
// [tables] and [[arrays of tables]], key = value with bare, quoted and
// dotted keys, basic and literal strings (multi-line too), integers,
// floats, booleans, arrays and inline tables; dates and times are kept as
// text. Tables are map[string]any. It is no general TOML parser: it checks
// what it reads but not every rule of the spec (redefined tables, say).
func parseTOML(src string) (map[string]any, error) {
	p := &tomlParser{src: src, line: 1}
	root := map[string]any{}
	cur := root
	for {
		p.skipSpace(true)
		if p.eof() {
			return root, nil
		}
		var err error
		if p.peek() == '[' {
			cur, err = p.header(root)
		} else {
			err = p.keyValue(cur)
		}
		if err != nil {
			return nil, err
		}
		p.skipSpace(false)
		if !p.eof() && p.peek() != '\n' {
			return nil, p.errorf("unexpected %q after a value", p.peek())
		}
	}
}

type tomlParser struct {
	src   string
	pos   int
	line  int
	depth int // arrays and inline tables open around pos: value recurses into each
}

func (p *tomlParser) eof() bool  { return p.pos >= len(p.src) }
func (p *tomlParser) peek() byte { return p.src[p.pos] }

func (p *tomlParser) errorf(format string, a ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, a...))
}

// skipSpace skips blanks and comments, and line breaks too when lines is set.
func (p *tomlParser) skipSpace(lines bool) {
	for !p.eof() {
		switch c := p.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n' && lines:
			p.pos++
			p.line++
		case c == '#':
			for !p.eof() && p.peek() != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// header reads [a.b] or [[a.b]] and returns the table it opens.
func (p *tomlParser) header(root map[string]any) (map[string]any, error) {
	p.pos++
	array := !p.eof() && p.peek() == '['
	if array {
		p.pos++
	}
	keys, err := p.key()
	if err != nil {
		return nil, err
	}
	closing := "]"
	if array {
		closing = "]]"
	}
	if !strings.HasPrefix(p.src[p.pos:], closing) {
		return nil, p.errorf("a table header does not end with %s", closing)
	}
	p.pos += len(closing)
	t, err := p.table(root, keys[:len(keys)-1])
	if err != nil {
		return nil, err
	}
	last := keys[len(keys)-1]
	if !array {
		return p.table(t, []string{last})
	}
	list, _ := t[last].([]any)
	if _, ok := t[last]; ok && list == nil {
		return nil, p.errorf("%s is not an array of tables", strings.Join(keys, "."))
	}
	next := map[string]any{}
	t[last] = append(list, next)
	return next, nil
}

// table walks (creating) the tables named by keys under t; an array of
// tables stands for its last element.
func (p *tomlParser) table(t map[string]any, keys []string) (map[string]any, error) {
	for _, k := range keys {
		switch v := t[k].(type) {
		case nil:
			next := map[string]any{}
			t[k] = next
			t = next
		case map[string]any:
			t = v
		case []any:
			last, ok := v[len(v)-1].(map[string]any)
			if !ok {
				return nil, p.errorf("%s is not a table", k)
			}
			t = last
		default:
			return nil, p.errorf("%s is a value, not a table", k)
		}
	}
	return t, nil
}

// key reads a dotted key.
func (p *tomlParser) key() ([]string, error) {
	var keys []string
	for {
		p.skipSpace(false)
		if p.eof() {
			return nil, p.errorf("a key is missing")
		}
		var k string
		switch c := p.peek(); {
		case c == '"' || c == '\'':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			k = s
		default:
			start := p.pos
			for !p.eof() && (isBare(p.peek())) {
				p.pos++
			}
			if p.pos == start {
				return nil, p.errorf("unexpected %q where a key should be", c)
			}
			k = p.src[start:p.pos]
		}
		if keys = append(keys, k); len(keys) > MaxDepth {
			return nil, p.errorf("a dotted key of more than %d parts, Warden's limit for a config file", MaxDepth)
		}
		p.skipSpace(false)
		if p.eof() || p.peek() != '.' {
			return keys, nil
		}
		p.pos++
	}
}

func isBare(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// keyValue reads key = value into t.
func (p *tomlParser) keyValue(t map[string]any) error {
	keys, err := p.key()
	if err != nil {
		return err
	}
	if p.eof() || p.peek() != '=' {
		return p.errorf("%s has no = and value", strings.Join(keys, "."))
	}
	p.pos++
	p.skipSpace(false)
	v, err := p.value()
	if err != nil {
		return err
	}
	t, err = p.table(t, keys[:len(keys)-1])
	if err != nil {
		return err
	}
	last := keys[len(keys)-1]
	if _, ok := t[last]; ok {
		return p.errorf("%s is defined twice", strings.Join(keys, "."))
	}
	t[last] = v
	return nil
}

func (p *tomlParser) value() (any, error) {
	if p.eof() {
		return nil, p.errorf("a value is missing")
	}
	switch p.peek() {
	case '"', '\'':
		return p.str()
	case '[', '{':
		if p.depth++; p.depth > MaxDepth {
			return nil, p.errorf("arrays and inline tables are nested more than %d deep, Warden's limit for a config file", MaxDepth)
		}
		defer func() { p.depth-- }()
	}
	switch p.peek() {
	case '[':
		p.pos++
		var list []any
		for {
			p.skipSpace(true)
			if p.eof() {
				return nil, p.errorf("an array is not closed with ]")
			}
			if p.peek() == ']' {
				p.pos++
				return list, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			p.skipSpace(true)
			if !p.eof() && p.peek() == ',' {
				p.pos++
			} else if p.eof() || p.peek() != ']' {
				return nil, p.errorf("array items are not separated by commas")
			}
		}
	case '{':
		p.pos++
		t := map[string]any{}
		for {
			p.skipSpace(true)
			if p.eof() {
				return nil, p.errorf("an inline table is not closed with }")
			}
			if p.peek() == '}' {
				p.pos++
				return t, nil
			}
			if err := p.keyValue(t); err != nil {
				return nil, err
			}
			p.skipSpace(true)
			if !p.eof() && p.peek() == ',' {
				p.pos++
			} else if p.eof() || p.peek() != '}' {
				return nil, p.errorf("inline table entries are not separated by commas")
			}
		}
	}
	start := p.pos
	for !p.eof() && !strings.ContainsRune(",]}#\n", rune(p.peek())) {
		p.pos++
	}
	word := strings.TrimSpace(p.src[start:p.pos])
	switch word {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	clean := strings.ReplaceAll(word, "_", "")
	if n, err := strconv.ParseInt(clean, 0, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(clean, 64); err == nil {
		return f, nil
	}
	if word != "" && word[0] >= '0' && word[0] <= '9' {
		return word, nil // a date or time, kept as written
	}
	return nil, p.errorf("%q is not a TOML value (strings need quotes)", word)
}

// str reads a basic or literal string, on one line or (tripled quotes) several.
func (p *tomlParser) str() (string, error) {
	q := p.src[p.pos : p.pos+1]
	multi := strings.HasPrefix(p.src[p.pos:], q+q+q)
	end := q
	if multi {
		end = q + q + q
		p.pos += 3
		if strings.HasPrefix(p.src[p.pos:], "\r\n") { // a newline right after the opening is dropped
			p.pos++
		}
		if !p.eof() && p.peek() == '\n' {
			p.pos++
			p.line++
		}
	} else {
		p.pos++
	}
	var b strings.Builder
	for {
		if p.eof() || (!multi && p.peek() == '\n') {
			return "", p.errorf("a string is not closed with %s", end)
		}
		if strings.HasPrefix(p.src[p.pos:], end) {
			p.pos += len(end)
			return b.String(), nil
		}
		c := p.peek()
		p.pos++
		if c == '\n' {
			p.line++
		}
		if c != '\\' || q == "'" {
			b.WriteByte(c)
			continue
		}
		if p.eof() {
			return "", p.errorf("a string ends in \\")
		}
		e := p.peek()
		p.pos++
		switch e {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case '"', '\\':
			b.WriteByte(e)
		case 'u', 'U':
			n := 4
			if e == 'U' {
				n = 8
			}
			if p.pos+n > len(p.src) {
				return "", p.errorf("a \\%c escape is cut short", e)
			}
			r, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
			if err != nil {
				return "", p.errorf("a \\%c escape is not hexadecimal", e)
			}
			p.pos += n
			b.WriteRune(rune(r))
		case ' ', '\t', '\r', '\n': // a line-ending backslash trims the whitespace after it
			if !multi {
				return "", p.errorf("a \\ before a space or line break is only for multi-line strings")
			}
			p.pos--
			for !p.eof() && strings.ContainsRune(" \t\r\n", rune(p.peek())) {
				if p.peek() == '\n' {
					p.line++
				}
				p.pos++
			}
		default:
			return "", p.errorf("\\%c is not a TOML escape", e)
		}
	}
}
