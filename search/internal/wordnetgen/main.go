// Command wordnetgen writes search/wordnet.txt, the table of related words
// the search index expands a query with, from WordNet 3.0 (Debian's
// wordnet-base: apt-get install -y wordnet-base). It is run by hand, from
// the search directory (go generate), when the evaluation's tools or the
// rules below change; the table it writes is committed, so neither builds
// nor tests need WordNet.
//
// For each single word of WordNet, the table lists the stemmed words of its
// first senses (their synonyms, and the words derived from them) that occur
// in the tool definitions of search/testdata: a query's word then reaches a
// tool that says the same thing in other words, and the table stays small.
// Hypernyms (a "duplicate" is a kind of "copy") follow a "|", for a lower
// weight.
package main

import (
	"bufio"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wardenmcp/warden/search"
	"github.com/wardenmcp/warden/search/internal/evalset"
)

// senses is how many of a word's senses count, most frequent first: the
// rare ones bring in more noise than meaning.
const senses = 2

// levels is how many steps up the hypernym tree count.
const levels = 1

var (
	dict = "/usr/share/wordnet"
	out  = "wordnet.txt"
	defs = []string{"testdata/servers.json", "testdata/wide_servers.json"}
)

type synset struct {
	words   []string
	hyper   []string // offsets of hypernym synsets, as "pos:offset"
	derived []string // "pos:offset" of derivationally related forms
}

func main() {
	vocab := vocabulary()
	synsets := map[string]*synset{}
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		readData(pos, synsets)
	}
	syn := map[string]map[string]bool{}
	hyp := map[string]map[string]bool{}
	addTo := func(m map[string]map[string]bool, key string, words []string) {
		for _, w := range words {
			if s := search.Stem(w); s != key && vocab[s] {
				if m[key] == nil {
					m[key] = map[string]bool{}
				}
				m[key][s] = true
			}
		}
	}
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		eachIndex(pos, func(lemma string, offsets []string) {
			key := search.Stem(lemma)
			for _, off := range offsets[:min(senses, len(offsets))] {
				ss := synsets[off]
				addTo(syn, key, ss.words)
				for _, d := range ss.derived {
					addTo(syn, key, synsets[d].words)
				}
				up := ss.hyper
				for range levels {
					var next []string
					for _, h := range up {
						addTo(hyp, key, synsets[h].words)
						next = append(next, synsets[h].hyper...)
					}
					up = next
				}
			}
		})
	}
	var lines []string
	for key := range syn {
		lines = append(lines, line(key, syn[key], hyp[key]))
	}
	for key := range hyp {
		if syn[key] == nil {
			lines = append(lines, line(key, nil, hyp[key]))
		}
	}
	slices.Sort(lines)
	if err := os.WriteFile(out, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d words over a vocabulary of %d\n", out, len(lines), len(vocab))
}

func line(key string, syn, hyp map[string]bool) string {
	l := key + " " + strings.Join(sorted(syn), " ")
	if len(hyp) > 0 {
		var h []string
		for w := range hyp {
			if !syn[w] {
				h = append(h, w)
			}
		}
		slices.Sort(h)
		if len(h) > 0 {
			l += " | " + strings.Join(h, " ")
		}
	}
	return strings.TrimSpace(l)
}

func sorted(m map[string]bool) []string {
	var s []string
	for w := range m {
		s = append(s, w)
	}
	slices.Sort(s)
	return s
}

// vocabulary is the set of index terms of the evaluation's tool
// definitions.
func vocabulary() map[string]bool {
	vocab := map[string]bool{}
	for _, path := range defs {
		servers, err := evalset.Servers(path)
		if err != nil {
			log.Fatal(err)
		}
		for _, tools := range servers {
			for _, t := range tools {
				text := []string{t.Name, t.Title, t.Description}
				for name, p := range t.InputSchema.Properties {
					text = append(text, name, p.Description)
				}
				for _, term := range search.Terms(strings.Join(text, " ")) {
					vocab[term] = true
				}
			}
		}
	}
	return vocab
}

// readData reads data.POS: one synset a line, "offset lexfile type
// wordcount(hex) word lexid ... pointercount pointer... | gloss".
func readData(pos string, into map[string]*synset) {
	scan(filepath.Join(dict, "data."+pos), func(f []string) {
		ss := &synset{}
		var n int
		fmt.Sscanf(f[3], "%x", &n)
		for i := range n {
			if w := f[4+2*i]; !strings.ContainsAny(w, "_-") {
				ss.words = append(ss.words, strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(w, "(a)"), "(p)")))
			}
		}
		i := 4 + 2*n
		var p int
		fmt.Sscanf(f[i], "%d", &p)
		for j := range p {
			sym, off, ptrPos := f[i+1+4*j], f[i+2+4*j], f[i+3+4*j]
			ref := posName(ptrPos) + ":" + off
			switch sym {
			case "@", "@i":
				ss.hyper = append(ss.hyper, ref)
			case "+":
				ss.derived = append(ss.derived, ref)
			}
		}
		into[pos+":"+f[0]] = ss
	})
}

// eachIndex calls fn with each single word of index.POS and its synsets,
// most frequent sense first.
func eachIndex(pos string, fn func(lemma string, offsets []string)) {
	scan(filepath.Join(dict, "index."+pos), func(f []string) {
		if strings.ContainsAny(f[0], "_-") {
			return
		}
		var n, p int
		fmt.Sscanf(f[2], "%d", &n)
		fmt.Sscanf(f[3], "%d", &p)
		var offsets []string
		for _, off := range f[len(f)-n:] {
			offsets = append(offsets, pos+":"+off)
		}
		fn(f[0], offsets)
	})
}

func posName(p string) string {
	return map[string]string{"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}[p]
}

// scan calls fn with the fields of each line of path that is not part of
// the licence header (those start with two spaces).
func scan(path string, fn func([]string)) {
	f, err := os.Open(path)
	if err != nil {
		log.Fatalf("%v (install WordNet: apt-get install -y wordnet-base)", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if line := s.Text(); !strings.HasPrefix(line, "  ") {
			fn(strings.Fields(line))
		}
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
}
