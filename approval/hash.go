package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/canon"
)

// Hash returns a tool's pin, "sha256:<hex>" over the canonical JSON
// (canon.JSON) of its name, title, description, inputSchema, outputSchema,
// annotations, _meta and icons: every field of mcp.Tool, so everything a
// client is passed of a tool is pinned (a changed _meta["ui/resourceUri"] or
// icon URL is a change to review like a changed description).
//
// Absent fields are omitted, never written as null: an empty title or
// description, a nil or JSON-null schema, nil annotations. Within annotations
// readOnlyHint and idempotentHint appear only when true (a client cannot tell
// false from absent), the pointer hints whenever set, and annotations with
// nothing set are omitted; so are an empty _meta and empty icons, which the
// SDK does not send either. So the pin depends only on what the server said,
// not on the SDK's marshalling options, and a tool without _meta and icons
// keeps the pin it had before they were covered.
func Hash(t *mcp.Tool) (string, error) {
	h, _, err := hashTool(t)
	return h, err
}

// hashTool returns the pin and the canonical definition it covers; records
// keep the definition for diffs, so one encoding per tool serves both.
func hashTool(t *mcp.Tool) (string, json.RawMessage, error) {
	if t == nil {
		return "", nil, errors.New("nil tool")
	}
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf = e.buf[:0]
	if err := e.definition(t); err != nil {
		return "", nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	def := slices.Clone(e.buf)
	sum := sha256.Sum256(def)
	h := make([]byte, len("sha256:")+hex.EncodedLen(len(sum)))
	copy(h, "sha256:")
	hex.Encode(h[len("sha256:"):], sum[:])
	return string(h), def, nil
}

// encoder writes canonical JSON: the bytes canon.JSON produces (sorted keys,
// no HTML escaping, encoding/json's string and number forms), but directly
// from decoded-JSON values (what an MCP client holds) without the
// marshal/decode/encode round trip. Other values go through canon.JSON.
type encoder struct {
	buf  []byte
	keys []string // a stack of map keys being sorted, shared by nested maps
}

var encoders = sync.Pool{New: func() any { return new(encoder) }}

// definition writes the hashed object; its keys are written in sorted order.
func (e *encoder) definition(t *mcp.Tool) error {
	e.buf = append(e.buf, '{')
	if len(t.Meta) > 0 {
		e.buf = append(e.buf, `"_meta":`...)
		if err := e.value(map[string]any(t.Meta)); err != nil {
			return fmt.Errorf("_meta: %w", err)
		}
		e.buf = append(e.buf, ',')
	}
	if a := t.Annotations; a != nil && (a.DestructiveHint != nil || a.IdempotentHint ||
		a.OpenWorldHint != nil || a.ReadOnlyHint || a.Title != "") {
		e.buf = append(e.buf, `"annotations":{`...)
		n := len(e.buf)
		sep := func() {
			if len(e.buf) > n {
				e.buf = append(e.buf, ',')
			}
		}
		if a.DestructiveHint != nil {
			sep()
			e.buf = strconv.AppendBool(append(e.buf, `"destructiveHint":`...), *a.DestructiveHint)
		}
		if a.IdempotentHint {
			sep()
			e.buf = append(e.buf, `"idempotentHint":true`...)
		}
		if a.OpenWorldHint != nil {
			sep()
			e.buf = strconv.AppendBool(append(e.buf, `"openWorldHint":`...), *a.OpenWorldHint)
		}
		if a.ReadOnlyHint {
			sep()
			e.buf = append(e.buf, `"readOnlyHint":true`...)
		}
		if a.Title != "" {
			sep()
			e.buf = appendString(append(e.buf, `"title":`...), a.Title)
		}
		e.buf = append(e.buf, "},"...)
	}
	if t.Description != "" {
		e.buf = append(appendString(append(e.buf, `"description":`...), t.Description), ',')
	}
	if len(t.Icons) > 0 {
		e.buf = append(e.buf, `"icons":`...)
		if err := e.value(t.Icons); err != nil {
			return fmt.Errorf("icons: %w", err)
		}
		e.buf = append(e.buf, ',')
	}
	if !absent(t.InputSchema) {
		e.buf = append(e.buf, `"inputSchema":`...)
		if err := e.value(t.InputSchema); err != nil {
			return fmt.Errorf("inputSchema: %w", err)
		}
		e.buf = append(e.buf, ',')
	}
	e.buf = appendString(append(e.buf, `"name":`...), t.Name)
	if !absent(t.OutputSchema) {
		e.buf = append(e.buf, `,"outputSchema":`...)
		if err := e.value(t.OutputSchema); err != nil {
			return fmt.Errorf("outputSchema: %w", err)
		}
	}
	if t.Title != "" {
		e.buf = appendString(append(e.buf, `,"title":`...), t.Title)
	}
	e.buf = append(e.buf, '}')
	return nil
}

// value writes v canonically.
func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case string:
		e.buf = appendString(e.buf, x)
	case float64:
		return e.float(x)
	case []any:
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
			e.buf = append(appendString(e.buf, k), ':')
			if err := e.value(x[k]); err != nil {
				return err
			}
		}
		e.keys = e.keys[:base]
		e.buf = append(e.buf, '}')
	default:
		b, err := canon.JSON(v)
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

// appendString writes s as canon.JSON does: encoding/json's escaping without
// HTML escapes, invalid UTF-8 replaced by a raw U+FFFD.
func appendString(dst []byte, s string) []byte {
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
			dst = append(dst, "\uFFFD"...) // canon.JSON's round trip leaves the replacement raw
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

// absent reports whether a schema value would encode as nothing or null.
func absent(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case json.RawMessage:
		t := bytes.TrimSpace(x)
		return len(t) == 0 || string(t) == "null"
	case map[string]any:
		return x == nil
	case []any:
		return x == nil
	case string, float64, bool:
		return false
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Interface, reflect.Slice:
		return rv.IsNil()
	}
	return false
}
