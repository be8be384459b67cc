package guardrails

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// text is a field prepared for the phrase rules: norm is the field in lower
// case with runs of space as one, invisible characters dropped, tag
// characters decoded to the ASCII they hide, and look-alike letters of
// suspicious words read as the Latin letters they imitate. pos maps every
// byte of norm back to the field's text, so findings quote the real words.
type text struct {
	field
	norm      string
	pos       []int32      // pos[i] is the offset in field.text of norm[i]; one more entry for the end
	hidden    []span       // runs of invisible characters
	strong    bool         // some hidden character is a bidi control, control character or tag
	lookalike []span       // words that mix scripts or imitate Latin
	occ       []occurrence // where the patterns' words occur in norm
	possible  bitSet       // the phrases whose required words norm holds
}

// span is a byte range of a field's text.
type span struct{ start, end int }

func prepare(f field) *text {
	t := &text{field: f}
	s := f.text
	suspicious := lookalikeWords(s)
	t.lookalike = suspicious
	var b strings.Builder
	b.Grow(len(s))
	t.pos = make([]int32, 0, len(s)+1)
	emit := func(r rune, at int) {
		n := b.Len()
		b.WriteRune(r)
		for ; n < b.Len(); n++ {
			t.pos = append(t.pos, int32(at))
		}
	}
	space := true // no leading space
	w := 0        // index into suspicious
	for i := 0; i < len(s); {
		if c := s[i]; c >= 0x20 && c < 0x7F && suspicious == nil { // plain ASCII, the common case
			if c == ' ' {
				if !space {
					b.WriteByte(' ')
					t.pos = append(t.pos, int32(i))
				}
				space = true
			} else {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				b.WriteByte(c)
				t.pos = append(t.pos, int32(i))
				space = false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if inv, strong := invisible(r); inv && !joinsEmoji(s, i, size) {
			if n := len(t.hidden); n > 0 && t.hidden[n-1].end == i {
				t.hidden[n-1].end = i + size
			} else {
				t.hidden = append(t.hidden, span{i, i + size})
			}
			t.strong = t.strong || strong
			if r >= 0xE0020 && r <= 0xE007E {
				emit(unicode.ToLower(r-0xE0000), i)
				space = r == 0xE0020
			}
			i += size
			continue
		}
		switch {
		case unicode.IsSpace(r):
			if !space {
				emit(' ', i)
				space = true
			}
			i += size
			continue
		case r == '\u2018' || r == '\u2019' || r == '\u201B' || r == '\u02BC':
			r = '\''
		case r == '\u201C' || r == '\u201D' || r == '\u201E':
			r = '"'
		}
		for w < len(suspicious) && suspicious[w].end <= i {
			w++
		}
		if w < len(suspicious) && suspicious[w].start <= i {
			if l, ok := latinLookalike(r); ok {
				r = l
			}
		}
		emit(unicode.ToLower(r), i)
		space = false
		i += size
	}
	t.pos = append(t.pos, int32(len(s)))
	t.norm = b.String()
	t.occ, t.possible = compiled().scan(t.norm)
	return t
}

// invisible reports whether r is a character a reviewer cannot see, and
// whether it is one of the strong kind (bidi controls, tags, control
// characters such as the ANSI escape) that has no place in tool text.
func invisible(r rune) (inv, strong bool) {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return false, false
	case r < 0x20 || (r >= 0x7F && r <= 0x9F):
		return true, true
	case r == 0x202A || r == 0x202B || r == 0x202C || r == 0x202D || r == 0x202E,
		r >= 0x2066 && r <= 0x2069, r == 0x061C:
		return true, true // bidi embeddings, overrides, isolates
	case r >= 0xE0000 && r <= 0xE007F:
		return true, true // tag characters
	case r >= 0xE0100 && r <= 0xE01EF:
		return true, true // variation selectors 17-256, used to smuggle bytes
	case r == 0x00AD, r == 0x034F, r == 0x180E, r >= 0x200B && r <= 0x200F,
		r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0:
		return true, false
	}
	return false, false
}

// joinsEmoji reports whether the zero-width joiner at s[i:i+size] joins two
// pictographs, as in 👩‍💻: a visible sequence, not hidden text.
func joinsEmoji(s string, i, size int) bool {
	if s[i:i+size] != "\u200d" {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i+size:])
	return pictograph(before) && pictograph(after)
}

func pictograph(r rune) bool {
	return r >= 0x1F000 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF || r == 0xFE0F
}

// confusables maps Cyrillic, Greek and fullwidth letters to the Latin letter
// they imitate (after Unicode TR39's confusables, the common cases).
var confusables = map[rune]rune{
	'а': 'a', 'А': 'a', 'В': 'b', 'в': 'b', 'с': 'c', 'С': 'c', 'ԁ': 'd', 'е': 'e', 'Е': 'e', 'ё': 'e',
	'һ': 'h', 'Н': 'h', 'і': 'i', 'І': 'i', 'ї': 'i', 'ј': 'j', 'Ј': 'j', 'к': 'k', 'К': 'k', 'М': 'm',
	'о': 'o', 'О': 'o', 'р': 'p', 'Р': 'p', 'ԛ': 'q', 'ѕ': 's', 'Ѕ': 's', 'т': 't', 'Т': 't', 'у': 'y',
	'У': 'y', 'х': 'x', 'Х': 'x', 'ԝ': 'w', 'Ԝ': 'w',
	'α': 'a', 'Α': 'a', 'Β': 'b', 'ε': 'e', 'Ε': 'e', 'Ζ': 'z', 'Η': 'h', 'ι': 'i', 'Ι': 'i', 'κ': 'k',
	'Κ': 'k', 'Μ': 'm', 'ν': 'v', 'Ν': 'n', 'ο': 'o', 'Ο': 'o', 'ρ': 'p', 'Ρ': 'p', 'τ': 't', 'Τ': 't',
	'υ': 'u', 'Υ': 'y', 'χ': 'x', 'Χ': 'x',
}

// latinLookalike returns the Latin letter r imitates, if any.
func latinLookalike(r rune) (rune, bool) {
	if r >= 0xFF21 && r <= 0xFF3A || r >= 0xFF41 && r <= 0xFF5A {
		return r - 0xFEE0, true // fullwidth Latin
	}
	l, ok := confusables[r]
	return l, ok
}

// lookalikeWords returns the words of s a reader would take for Latin words
// but that are not: Latin mixed with Cyrillic or Greek, fullwidth or
// mathematical letters, or a word made only of look-alike letters among
// Latin text. Cyrillic or Greek prose is left alone.
func lookalikeWords(s string) []span {
	if ascii(s) {
		return nil
	}
	var latin, other int
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if unicode.IsLetter(r) {
				latin++
			}
		case unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Greek, r):
			other++
		}
	}
	if latin+other == 0 || other == 0 && !hasOddLatin(s) {
		return nil
	}
	latinText := latin > 2*other
	var out []span
	start := -1
	var hasLatin, hasOther, odd, allConfusable bool
	end := func(i int) {
		if start >= 0 && (odd || hasLatin && hasOther || hasOther && allConfusable && latinText) {
			out = append(out, span{start, i})
		}
		start = -1
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsMark(r) {
			end(i)
			continue
		}
		if start < 0 {
			start, hasLatin, hasOther, odd, allConfusable = i, false, false, false, true
		}
		switch {
		case unicode.Is(unicode.Latin, r):
			if r >= 0xFF21 && r <= 0xFF5A {
				odd = true
			} else {
				hasLatin = true
			}
		case unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Greek, r):
			hasOther = true
			if _, ok := confusables[r]; !ok {
				allConfusable = false
			}
		case r >= 0x1D400 && r <= 0x1D7FF:
			odd = true // mathematical alphanumerics
		}
	}
	end(len(s))
	return out
}

// ascii reports whether s is all ASCII.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// runeName says which script a look-alike letter really is.
func runeName(r rune) string {
	script := "fullwidth"
	switch {
	case unicode.Is(unicode.Cyrillic, r):
		script = "Cyrillic"
	case unicode.Is(unicode.Greek, r):
		script = "Greek"
	}
	return fmt.Sprintf("%s U+%04X", script, r)
}

// hasOddLatin reports whether s has fullwidth or mathematical letters.
func hasOddLatin(s string) bool {
	for _, r := range s {
		if r >= 0xFF21 && r <= 0xFF5A || r >= 0x1D400 && r <= 0x1D7FF {
			return true
		}
	}
	return false
}

// excerpt returns the field's words behind norm[i:j], widened to whole words
// and paths (~/.ssh/id_rsa) and at most maxExcerpt long, with hidden characters made visible.
func (t *text) excerpt(i, j int) string {
	s := t.text
	start, end := int(t.pos[i]), int(t.pos[j])
	if j > i && j < len(t.pos) && end <= int(t.pos[j-1]) {
		_, size := utf8.DecodeRuneInString(s[t.pos[j-1]:])
		end = int(t.pos[j-1]) + size
	}
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:start])
		if !wordRune(r) && !strings.ContainsRune("~/.-", r) {
			break
		}
		start -= size
	}
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		if !wordRune(r) && !strings.ContainsRune("~/.-", r) {
			break
		}
		end += size
	}
	return strings.TrimRight(visible(s[start:end]), ".-")
}

const maxExcerpt = 160 // runes

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// visible writes s for a person: tag characters as the text they hide in
// [hidden: …], other invisible characters as [U+XXXX], runs of space as one,
// cut at maxExcerpt runes.
func visible(s string) string {
	var b strings.Builder
	n := 0
	inTags := false
	space := false
	for _, r := range s {
		if n >= maxExcerpt {
			b.WriteString("…")
			break
		}
		isTag := r >= 0xE0020 && r <= 0xE007E
		if inTags && !isTag {
			b.WriteString("]")
			inTags = false
		}
		switch inv, _ := invisible(r); {
		case isTag:
			if !inTags {
				b.WriteString("[hidden: ")
				inTags = true
			}
			b.WriteRune(r - 0xE0000)
		case inv:
			fmt.Fprintf(&b, "[U+%04X]", r)
		case unicode.IsSpace(r):
			if !space {
				b.WriteByte(' ')
			}
			space = true
			n++
			continue
		default:
			b.WriteRune(r)
		}
		space = false
		n++
	}
	if inTags {
		b.WriteString("]")
	}
	return strings.TrimSpace(b.String())
}
