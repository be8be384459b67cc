// Package display makes text that came from an MCP server safe to show a
// person: a name, title, description, error or log line can carry terminal
// control sequences (which clear the screen and draw a fake prompt), bidi
// overrides (which reorder what is read) or invisible characters (which hide
// a difference). Escape shows each such character as a visible escape
// (\x1b, \u202e) instead; everything else is left as it is.
//
// The CLI and the review page use this one function for every server
// string, so what a person approves is what they saw.
package display

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Escape returns s with every character that would not show as itself
// escaped: C0 and C1 controls and DEL (\x1b; \n, \r and \t as such), format
// characters such as bidi controls and zero-width ones (\u202e, \u200b),
// line and paragraph separators, private-use and unassigned code points,
// blank letters (Hangul fillers), and bytes that are not UTF-8 (\xff).
func Escape(s string) string { return escape(s, false) }

// Text is Escape for text of several lines (a description, a log, a
// tool's answer): line breaks and tabs are kept as they are.
func Text(s string) string { return escape(s, true) }

func escape(s string, text bool) string {
	shown := func(r rune) bool { return !hidden(r) || (text && (r == '\n' || r == '\t')) }
	if plain(s, text) || strings.IndexFunc(s, func(r rune) bool { return !shown(r) }) < 0 && utf8.ValidString(s) {
		return s // the common case: nothing to do, no allocation
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case shown(r):
			b.WriteString(s[:size])
		default:
			writeEscape(&b, r)
		}
		s = s[size:]
	}
	return b.String()
}

// plain reports whether s is printable ASCII only (with text, line breaks
// and tabs too): most of what servers say, checked a byte at a time.
func plain(s string, text bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7E) && !(text && (c == '\n' || c == '\t')) {
			return false
		}
	}
	return true
}

func writeEscape(b *strings.Builder, r rune) {
	switch {
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\t':
		b.WriteString(`\t`)
	case r < 0xA0:
		fmt.Fprintf(b, `\x%02x`, r)
	case r <= 0xFFFF:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
}

// hidden reports whether r would not show as itself on a terminal or page.
func hidden(r rune) bool {
	if r >= 0x20 && r < 0x7F {
		return false // printable ASCII, most of any text
	}
	switch r {
	case '\u034f', // combining grapheme joiner
		'\u115f', '\u1160', '\u3164', '\uffa0': // Hangul fillers: letters that draw nothing
		return true
	}
	return !unicode.IsGraphic(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// Writer returns a writer that writes what it is given to w, escaped as by
// Text: for a stream of lines (a server's log), so a character split
// between two writes is escaped all the same. It keeps back the start of a
// character until the rest comes; a stream that ends inside one (not UTF-8
// anyway) loses those few bytes.
func Writer(w io.Writer) io.Writer { return &writer{w: w} }

type writer struct {
	w    io.Writer
	tail []byte // the start of a character the last write cut
}

func (e *writer) Write(p []byte) (int, error) {
	buf := append(e.tail, p...)
	// Keep back an incomplete character at the end, for the next write.
	cut := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	e.tail = append(e.tail[:0:0], buf[cut:]...)
	if _, err := io.WriteString(e.w, Text(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// JSON returns encoded JSON with every character that would not show as
// itself written as a \u escape: the same JSON to a program, nothing hidden
// from a person reading it. (encoding/json escapes control characters
// already; bidi and zero-width ones it leaves as they are.)
func JSON(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r < 0x80 || !hidden(r) {
			if out != nil {
				out = append(out, b[i:i+n]...)
			}
			i += n
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(b)+16), b[:i]...)
		}
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
	}
	if out == nil {
		return b
	}
	return out
}
