package answer

import (
	"bytes"
	"encoding/json"
)

// Reading an answer's JSON without decoding it: the members of an object,
// where they lie, for the few keys a pass-through must read or rewrite.

// Span is where a member lies in an object: from its key's opening quote
// at Start, its value from Value to End.
type Span struct{ Start, Value, End int }

// EachMember calls fn with each member of obj (valid JSON) in turn, its
// key with escapes read (bytes that are not UTF-8 are given as they are),
// and reports whether obj is an object.
func EachMember(obj []byte, fn func(key []byte, s Span)) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	for i = skipSpace(obj, i+1); obj[i] != '}'; i = skipSpace(obj, i) {
		if obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		start := i
		end := skipValue(obj, i)
		k := obj[i+1 : end-1]
		if bytes.IndexByte(k, '\\') >= 0 {
			var text string
			json.Unmarshal(obj[i:end], &text) // valid JSON: it cannot fail
			k = []byte(text)
		}
		i = skipSpace(obj, skipSpace(obj, end)+1) // past ':'
		end = skipValue(obj, i)
		fn(k, Span{start, i, end})
		i = end
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value that starts at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		for j := i + 1; ; {
			q := j + bytes.IndexByte(b[j:], '"')
			n := 0 // backslashes before it
			for p := q - 1; b[p] == '\\'; p-- {
				n++
			}
			if n%2 == 0 {
				return q + 1
			}
			j = q + 1
		}
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipValue(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[i])) {
		i++
	}
	return i
}
