package canon

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Raw is JSON in canonical form already, as Append writes it: Append copies
// it as it is, JSON returns it, and it marshals as itself. Warden keeps listed
// tools' schemas so, a fraction of the memory of their decoded maps, and
// hashes and serves them without encoding them again.
type Raw []byte

// MarshalJSON returns r; an empty Raw is null.
func (r Raw) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// Append appends the canonical encoding of v to dst: the bytes JSON(v)
// returns, written directly from decoded JSON values (nil, bool, string,
// float64, []any, map[string]any: what encoding/json decodes into any) and
// Raw, without JSON's marshal/decode/encode round trip. Other values go
// through JSON.
func Append(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.buf = dst
	err := e.value(v)
	dst = e.buf
	e.buf, e.keys = nil, e.keys[:0]
	encoders.Put(e)
	return dst, err
}

// encoder is Append's state.
type encoder struct {
	buf  []byte
	keys []string // a stack of map keys being sorted, shared by nested maps
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

// value writes v canonically.
func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case string:
		e.buf = AppendString(e.buf, x)
	case float64:
		return e.float(x)
	case []any:
		if x == nil { // as encoding/json writes it
			e.buf = append(e.buf, "null"...)
			return nil
		}
		e.buf = append(e.buf, '[')
		for i, el := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(el); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case map[string]any:
		if x == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		base := len(e.keys)
		for k := range x {
			e.keys = append(e.keys, k)
		}
		slices.Sort(e.keys[base:])
		e.buf = append(e.buf, '{')
		for i := base; i < base+len(x); i++ {
			k := e.keys[i] // re-read: nested maps may grow e.keys
			if i > base {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(AppendString(e.buf, k), ':')
			if err := e.value(x[k]); err != nil {
				return err
			}
		}
		e.keys = e.keys[:base]
		e.buf = append(e.buf, '}')
	case Raw:
		if len(x) == 0 {
			x = Raw("null") // as it marshals
		}
		e.buf = append(e.buf, x...)
	default:
		b, err := JSON(v)
		if err != nil {
			return err
		}
		e.buf = append(e.buf, b...)
	}
	return nil
}

// float writes f as encoding/json does (ES6 number formatting).
func (e *encoder) float(f float64) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("unsupported number %v", f)
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(e.buf, f, format, -1, 64)
	if format == 'e' { // e-09 -> e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	e.buf = b
	return nil
}

// AppendString appends s as JSON writes it: encoding/json's escaping without
// HTML escapes, invalid UTF-8 replaced by a raw U+FFFD.
func AppendString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...) // JSON's round trip leaves the replacement raw
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(append(dst, s[start:]...), '"')
}

// Member is the value of r's member key, if r is an object that has one:
// a look at one member without decoding the rest (the type of a tool's
// input schema, for each of hundreds of tools at start).
func (r Raw) Member(key string) (Raw, bool) {
	if len(r) < 2 || r[0] != '{' {
		return nil, false
	}
	want := AppendString(nil, key) // canonical keys are written so
	for i := 1; i < len(r) && r[i] == '"'; {
		end := stringEnd(r, i)
		if end+1 >= len(r) || r[end+1] != ':' {
			return nil, false // not canonical JSON
		}
		k, start := r[i:end+1], end+2 // past the key and its ':'
		i = valueEnd(r, start)
		if string(k) == string(want) {
			return r[start:i], true
		}
		i++ // past ',' (or the object's '}', ending the loop)
	}
	return nil, false
}

// stringEnd is the index of the quote that ends the string starting at i.
func stringEnd(r Raw, i int) int {
	for i++; i < len(r); i++ {
		switch r[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(r)
}

// valueEnd is the index just past the value starting at i: of the ',' or
// '}' that follows it in its object.
func valueEnd(r Raw, i int) int {
	depth := 0
	for ; i < len(r); i++ {
		switch r[i] {
		case '"':
			i = stringEnd(r, i)
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return len(r)
}
