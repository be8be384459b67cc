package guardrails

import (
	"bytes"
	"encoding/json"
)

// maxWalkDepth bounds how deep walkStrings follows nested values.
const maxWalkDepth = 256

// walkStrings calls fn with every string in the JSON document b, values and
// object keys (key true: path is then the object's), at most its first max
// bytes, with its path, in document order, until fn returns false. It reads
// b once, without building the document; at a syntax error, or deeper than
// maxWalkDepth, it stops. fn must not keep path.
func walkStrings(b []byte, max int, fn func(path []pathPart, s string, key bool) bool) {
	w := walker{b: b, max: max, fn: fn}
	w.value()
}

type walker struct {
	b    []byte
	i    int
	max  int
	path []pathPart
	fn   func(path []pathPart, s string, key bool) bool
	stop bool
}

func (w *walker) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value reads one value; it returns false once walking stops.
func (w *walker) value() bool {
	w.space()
	if w.stop || w.i >= len(w.b) || len(w.path) > maxWalkDepth {
		w.stop = true
		return false
	}
	switch w.b[w.i] {
	case '"':
		s, ok := w.str()
		if ok && !w.fn(w.path, s, false) {
			w.stop = true
		}
		return !w.stop
	case '{':
		w.i++
		for first := true; ; first = false {
			w.space()
			if w.i < len(w.b) && w.b[w.i] == '}' && first {
				w.i++
				return true
			}
			if w.i >= len(w.b) || w.b[w.i] != '"' {
				w.stop = true
				return false
			}
			k, ok := w.str()
			w.space()
			if !ok || w.i >= len(w.b) || w.b[w.i] != ':' {
				w.stop = true
				return false
			}
			w.i++
			if !w.fn(w.path, k, true) {
				w.stop = true
				return false
			}
			w.path = append(w.path, pathPart{key: k})
			ok = w.value()
			w.path = w.path[:len(w.path)-1]
			if !ok || !w.next('}') {
				return false
			}
			if w.b[w.i-1] == '}' {
				return true
			}
		}
	case '[':
		w.i++
		w.space()
		if w.i < len(w.b) && w.b[w.i] == ']' {
			w.i++
			return true
		}
		for n := 0; ; n++ {
			w.path = append(w.path, pathPart{index: n})
			ok := w.value()
			w.path = w.path[:len(w.path)-1]
			if !ok || !w.next(']') {
				return false
			}
			if w.b[w.i-1] == ']' {
				return true
			}
		}
	default: // a number, true, false or null
		for w.i < len(w.b) {
			switch w.b[w.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return true
			}
			w.i++
		}
		return true
	}
}

// next reads the comma or the closing byte after a member or element.
func (w *walker) next(closing byte) bool {
	w.space()
	if w.i < len(w.b) && (w.b[w.i] == ',' || w.b[w.i] == closing) {
		w.i++
		return true
	}
	w.stop = true
	return false
}

// str reads a string at w.i, unescaped, at most its first w.max bytes
// (a few less when the cut falls in an escape).
func (w *walker) str() (string, bool) {
	start := w.i
	escaped := false
	for w.i++; w.i < len(w.b); {
		j := bytes.IndexAny(w.b[w.i:], `"\`)
		if j < 0 {
			break
		}
		w.i += j
		if w.b[w.i] == '\\' {
			escaped = true
			w.i += 2
			continue
		}
		w.i++
		body := w.b[start+1 : w.i-1]
		end := min(len(body), w.max)
		if !escaped {
			return string(body[:end]), true
		}
		var s string
		for cut := end; cut >= max(0, end-6); cut-- {
			if json.Unmarshal(append(append([]byte{'"'}, body[:cut]...), '"'), &s) == nil {
				return s[:min(len(s), w.max)], true
			}
			if cut == len(body) {
				return "", false // not JSON
			}
		}
		return "", false
	}
	w.i = len(w.b)
	return "", false
}
