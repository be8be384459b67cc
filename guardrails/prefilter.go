package guardrails

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"sync"
	"unicode/utf8"
)

// phrases is a set of alternative patterns. Go's regexp is linear but slow
// on long alternations of words, so every text is read once by an
// Aho-Corasick automaton over the words the patterns need (in prepare), and
// a pattern runs only on texts holding one of its required words, and only
// from where one of its leading words starts when it has them. That keeps a
// definition's scan in microseconds.
//
// A set is declared at package initialisation with its patterns' sources
// only; every set of the package is parsed in place for its words, and the
// automaton built, together on first use (compiled): a process that scans
// nothing, like every warden command but the daemon, pays nothing for them.
// A pattern's regexp is compiled only when a text first holds its words
// (phrase.regexp): compiling all of them with the lexicon took 35-42 ms and
// 7 MB at the daemon's first scan, for patterns most definitions never
// need; the lexicon alone takes about 21 ms and 3.4 MB there.
type phrases []phrase

type phrase struct {
	src     string
	num     int32   // the phrase's number among all of the package's
	anyWord []int32 // a match contains one of these words (ids); nil: no filter
	// lead: every match starts with one of these words (ids, sorted), after
	// a word boundary when leadB; the regexp is then anchored, matched from
	// there.
	lead   []int32
	leadB  bool
	maxLen int // bytes a match can span at most: an anchored match reads no further

	once sync.Once
	re   *regexp.Regexp // see regexp
}

// declared is every set the package declares. Only package variables call
// anyOf, so it is complete before any scan.
var declared []phrases

// anyOf declares a set of alternative patterns, parsed on first use.
func anyOf(alts ...string) phrases {
	ps := make(phrases, len(alts))
	for i, a := range alts {
		ps[i].src = a
	}
	declared = append(declared, ps)
	return ps
}

// lexicon numbers every required and leading word of every pattern, for
// the automaton; phrases lists, by word, the phrases that require it.
type lexicon struct {
	ids     map[string]int32
	words   []string
	phrases [][]int32
	count   int32 // phrases parsed
	auto    *automaton
}

// compiled parses every declared set in place and builds the lexicon,
// once, on first use; both are read-only after, but for each phrase's
// regexp (phrase.regexp). What reads a set's patterns calls it first
// (prepare does, for every text).
var compiled = sync.OnceValue(func() *lexicon {
	lx := &lexicon{ids: map[string]int32{}}
	for _, ps := range declared {
		for i := range ps {
			lx.parse(&ps[i])
		}
	}
	lx.auto = build(lx.words)
	return lx
})

func (lx *lexicon) wordID(w string) int32 {
	id, seen := lx.ids[w]
	if !seen {
		id = int32(len(lx.words))
		lx.ids[w] = id
		lx.words = append(lx.words, w)
		lx.phrases = append(lx.phrases, nil)
	}
	return id
}

// parse parses one pattern and numbers its words.
func (lx *lexicon) parse(p *phrase) {
	p.num = lx.count
	lx.count++
	tree, err := syntax.Parse(p.src, syntax.Perl)
	if err != nil {
		panic("guardrails: " + err.Error()) // a pattern of the package's own
	}
	tree = tree.Simplify()
	if ws, ok := required(tree); ok {
		for _, w := range ws {
			id := lx.wordID(w)
			p.anyWord = append(p.anyWord, id)
			lx.phrases[id] = append(lx.phrases[id], p.num)
		}
	}
	if ws, b, ok := leading(tree); ok {
		for _, w := range ws {
			p.lead = append(p.lead, lx.wordID(w))
		}
		slices.Sort(p.lead)
		p.leadB = b
		p.maxLen = min(maxLength(tree), unboundedMatch)
	}
}

// regexp is p's pattern, anchored at its start when it has leading words,
// compiled on first use. Every pattern parses (lexicon.parse), so it compiles.
func (p *phrase) regexp() *regexp.Regexp {
	p.once.Do(func() {
		src := p.src
		if p.lead != nil {
			src = `^(?:` + src + `)`
		}
		p.re = regexp.MustCompile(src)
	})
	return p.re
}

// unboundedMatch caps how far a pattern with an unbounded part may reach
// from its leading word: a few sentences.
const unboundedMatch = 400

// maxLength returns how many bytes a match of re spans at most, or
// unboundedMatch when it has no bound.
func maxLength(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(string(re.Rune))
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 4 // one rune
	case syntax.OpCapture, syntax.OpQuest:
		return maxLength(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max >= 0 {
			return min(re.Max*maxLength(re.Sub[0]), unboundedMatch)
		}
		return unboundedMatch
	case syntax.OpStar, syntax.OpPlus:
		return unboundedMatch
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n = min(n+maxLength(sub), unboundedMatch)
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, sub := range re.Sub {
			n = max(n, maxLength(sub))
		}
		return n
	}
	return 0 // empty matches and assertions
}

// leading returns the words every match of re starts with, and whether a
// word boundary comes first.
func leading(re *syntax.Regexp) ([]string, bool, bool) {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat {
		return nil, false, false
	}
	subs := re.Sub
	b := false
	if len(subs) > 0 && subs[0].Op == syntax.OpWordBoundary {
		b, subs = true, subs[1:]
	}
	if len(subs) == 0 {
		return nil, false, false
	}
	ws, ok := expand(subs[0])
	if !ok || slices.Contains(ws, "") {
		return nil, false, false
	}
	return ws, b, true
}

// required returns literal strings one of which every match of re contains,
// choosing the most selective (longest shortest word) where there is a choice.
func required(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral, syntax.OpAlternate:
		if words, ok := expand(re); ok && !slices.Contains(words, "") {
			return words, true
		}
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		consider := func(words []string) {
			if len(words) == 0 || slices.Contains(words, "") {
				return
			}
			if best == nil || shortest(words) > shortest(best) {
				best = words
			}
		}
		// Runs of subexpressions with a small finite set of strings give
		// whole words ("p" then "ut|aste" is put or paste); others count alone.
		run := []string{""}
		for _, sub := range re.Sub {
			if words, ok := expand(sub); ok {
				if next := cross(run, words); next != nil {
					run = next
					continue
				}
			}
			consider(run)
			run = []string{""}
			if words, ok := required(sub); ok {
				consider(words)
			}
		}
		consider(run)
		return best, best != nil
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			words, ok := required(sub)
			if !ok {
				return nil, false
			}
			all = append(all, words...)
		}
		return all, true
	}
	return nil, false
}

const (
	maxExpand = 64
	maxClass  = 8
)

// expand returns every string re matches, when they are few.
func expand(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpCharClass: // small classes only, as the parser makes of e|s
		var all []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(all) == maxClass {
					return nil, false
				}
				all = append(all, string(r))
			}
		}
		return all, true
	case syntax.OpCapture:
		return expand(re.Sub[0])
	case syntax.OpQuest:
		words, ok := expand(re.Sub[0])
		return append(words, ""), ok
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			words, ok := expand(sub)
			if !ok || len(all)+len(words) > maxExpand {
				return nil, false
			}
			all = append(all, words...)
		}
		return all, true
	case syntax.OpConcat:
		run := []string{""}
		for _, sub := range re.Sub {
			words, ok := expand(sub)
			if !ok {
				return nil, false
			}
			if run = cross(run, words); run == nil {
				return nil, false
			}
		}
		return run, true
	}
	return nil, false
}

// cross returns every a followed by every b, or nil past maxExpand.
func cross(a, b []string) []string {
	if len(a)*len(b) > maxExpand {
		return nil
	}
	out := make([]string, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, x+y)
		}
	}
	return out
}

func shortest(words []string) int {
	return len(slices.MinFunc(words, func(a, b string) int { return len(a) - len(b) }))
}

// may reports whether t holds one of p's required words.
func (p *phrase) may(t *text) bool {
	return p.anyWord == nil || t.possible.has(p.num)
}

// each calls yield with p's matches in t.norm[lo:hi], leftmost first, as
// offsets in t.norm, until yield returns false.
func (p *phrase) each(t *text, lo, hi int, yield func([]int) bool) {
	if !p.may(t) {
		return
	}
	if p.lead == nil {
		for _, m := range p.regexp().FindAllStringIndex(t.norm[lo:hi], -1) {
			if !yield([]int{lo + m[0], lo + m[1]}) {
				return
			}
		}
		return
	}
	end := -1 // matches do not overlap
	for _, o := range t.occ {
		start := int(o.start)
		if start < lo || start <= end {
			continue
		}
		if start >= hi {
			return
		}
		if _, ok := slices.BinarySearch(p.lead, o.id); !ok {
			continue
		}
		if p.leadB && start > lo && asciiWord(t.norm[start-1]) {
			continue
		}
		// One rune past the longest match, so a closing \b sees the next letter.
		if m := p.regexp().FindStringIndex(t.norm[start:min(hi, start+p.maxLen+utf8.UTFMax)]); m != nil {
			end = start + m[1]
			if !yield([]int{start, end}) {
				return
			}
		}
	}
}

// asciiWord reports whether c is a character of a word for regexp's \b.
func asciiWord(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// find returns the leftmost match in t.norm[lo:hi] of any pattern, or nil.
func (ps phrases) find(t *text, lo, hi int) []int {
	var best []int
	for i := range ps {
		ps[i].each(t, lo, hi, func(m []int) bool {
			if best == nil || m[0] < best[0] {
				best = m
			}
			return false
		})
	}
	return best
}

// findAll returns every pattern's matches in t.norm[lo:hi], in order of
// where they start.
func (ps phrases) findAll(t *text, lo, hi int) [][]int {
	var all [][]int
	for i := range ps {
		ps[i].each(t, lo, hi, func(m []int) bool {
			all = append(all, m)
			return true
		})
	}
	slices.SortFunc(all, func(a, b []int) int { return a[0] - b[0] })
	return all
}

// match reports whether any pattern matches t.norm[lo:hi].
func (ps phrases) match(t *text, lo, hi int) bool {
	return ps.find(t, lo, hi) != nil
}

// bitSet is a set of small numbers.
type bitSet []uint64

func newBitSet(n int) bitSet      { return make(bitSet, (n+63)/64) }
func (b bitSet) has(i int32) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitSet) add(i int32)      { b[i/64] |= 1 << (i % 64) }

// automaton is an Aho-Corasick automaton over the patterns' words: a trie
// over classes of bytes, with each node's edges sorted by class in one
// array, and fail links. The root's edges are a table by class, so a byte
// that starts no word costs one lookup. (A full table of every node's
// moves, 9,600 nodes by 113 classes, read one lookup a byte but held 2.2 MB
// of a 28-server daemon's heap for good; this, with the words' ids at
// each node, holds about 0.4 MB.)
type automaton struct {
	class [256]uint8 // byte to class; 0 for bytes in no word
	root  []uint16   // the root's child by class; 0: none
	// Node n's edges are first[n]:first[n+1] of edgeClass and edgeNext.
	first     []uint32
	edgeClass []uint8
	edgeNext  []uint16
	fail      []uint16
	out       [][]int32 // ids of the words that end at each node
}

func build(list []string) *automaton {
	a := &automaton{}
	nclass, size := 1, 1 // size: nodes at most, the root and a node a byte
	for _, w := range list {
		size += len(w)
		for i := 0; i < len(w); i++ {
			if a.class[w[i]] == 0 {
				a.class[w[i]] = uint8(nclass)
				nclass++
			}
		}
	}
	// The trie, with its edges by node and class while it grows.
	type edge struct {
		node int32
		c    uint8
	}
	child := make(map[edge]int32, size)
	edges := make([][]uint8, 1, size) // each node's edges' classes
	a.out = make([][]int32, 1, size)
	for id, w := range list {
		n := int32(0)
		for i := 0; i < len(w); i++ {
			e := edge{n, a.class[w[i]]}
			next, ok := child[e]
			if !ok {
				next = int32(len(a.out))
				child[e] = next
				edges[n] = append(edges[n], e.c)
				edges = append(edges, nil)
				a.out = append(a.out, nil)
			}
			n = next
		}
		a.out[n] = append(a.out[n], int32(id))
	}
	if len(a.out) > 1<<16 {
		panic("guardrails: too many pattern words for the automaton")
	}
	a.out = slices.Clone(a.out) // kept for good: not the room for a node a byte
	a.first = make([]uint32, len(a.out)+1)
	a.edgeClass = make([]uint8, 0, len(a.out)-1) // an edge to each node but the root
	a.edgeNext = make([]uint16, 0, len(a.out)-1)
	for n, cs := range edges {
		slices.Sort(cs)
		a.first[n+1] = a.first[n] + uint32(len(cs))
		for _, c := range cs {
			a.edgeClass = append(a.edgeClass, c)
			a.edgeNext = append(a.edgeNext, uint16(child[edge{int32(n), c}]))
		}
	}
	a.root = make([]uint16, nclass)
	for i := a.first[0]; i < a.first[1]; i++ {
		a.root[a.edgeClass[i]] = a.edgeNext[i]
	}
	// Breadth first, so a node's fail link is set before its children's.
	a.fail = make([]uint16, len(a.out))
	queue := append(make([]uint16, 0, len(a.out)), 0)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for i := a.first[n]; i < a.first[n+1]; i++ {
			c, next := a.edgeClass[i], a.edgeNext[i]
			if n != 0 {
				a.fail[next] = uint16(a.step(int(a.fail[n]), c))
				a.out[next] = append(a.out[next], a.out[a.fail[next]]...)
			}
			queue = append(queue, next)
		}
	}
	return a
}

// step is the node after n on a byte of class c.
func (a *automaton) step(n int, c uint8) int {
	for n != 0 {
		for i := a.first[n]; i < a.first[n+1]; i++ {
			if a.edgeClass[i] == c {
				return int(a.edgeNext[i])
			}
		}
		n = int(a.fail[n])
	}
	return int(a.root[c])
}

// occurrence is where a word starts in a text.
type occurrence struct{ id, start int32 }

// scan returns where the words occur in s, in order of where they start,
// and the set of phrases whose required words s holds.
func (lx *lexicon) scan(s string) ([]occurrence, bitSet) {
	a := lx.auto
	occ := make([]occurrence, 0, len(s)/8)
	possible := newBitSet(int(lx.count))
	n := 0
	for i := 0; i < len(s); i++ {
		n = a.step(n, a.class[s[i]])
		for _, id := range a.out[n] {
			occ = append(occ, occurrence{id, int32(i + 1 - len(lx.words[id]))})
			for _, p := range lx.phrases[id] {
				possible.add(p)
			}
		}
	}
	slices.SortStableFunc(occ, func(x, y occurrence) int { return int(x.start - y.start) })
	return occ, possible
}
