// Package search ranks tools for a query: BM25F over a tool's name, title,
// description, parameter names and descriptions and its server's name, with
// names split at snake, camel and kebab boundaries and words reduced by a
// light stemmer. The index is sharded by server, so re-indexing one server
// touches only its own postings and the shared document frequencies.
package search

import (
	"math"
	"sort"
	"sync"
)

// Doc is one tool to index. Key is what a hit is known by (the aggregated
// name); Payload rides along untouched for the caller.
type Doc struct {
	Key, Server, Tool, Title, Description string
	Params                                []Param
	// Context is what the server says of itself (its instructions): the
	// same for each of its tools, so it weighs little and leaves a tool's
	// length alone.
	Context string
	Payload any
}

// Param is one input parameter.
type Param struct{ Name, Description string }

// Hit is a found tool with its score (higher is better).
type Hit struct {
	Doc   *Doc
	Score float64
}

// Field weights: a word in a tool's name says more about what it does than
// one in its description; the server's name is context for every tool, and
// people name it ("on gitlab", "in my calendar"). Name, description and
// server were set on the wide evaluation's tune part (from 3, 1 and 1).
const (
	wName      = 2.0
	wTitle     = 2.0
	wDesc      = 1.5
	wParamName = 1.0
	wParamDesc = 0.4
	wServer    = 2.0
	wContext   = 0.2

	k1 = 1.2
	b  = 0.75

	// Words a synonym brings in count less than the query's own.
	wSynonym = 0.5
)

type posting struct {
	doc int32   // index into shard.docs
	tf  float32 // field-weighted term frequency
}

type shard struct {
	docs     []*Doc
	lens     []float32 // field-weighted length of each doc
	postings map[string][]posting
}

// Index is safe for concurrent use.
type Index struct {
	mu     sync.RWMutex
	shards map[string]*shard
	df     map[string]int32 // documents holding each term, over all shards
	n      int
	lenSum float64
}

// New returns an empty index.
func New() *Index {
	return &Index{shards: map[string]*shard{}, df: map[string]int32{}}
}

// Set replaces server's documents with docs (none removes the server).
func (x *Index) Set(server string, docs []Doc) {
	sh := build(docs)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.drop(server)
	if len(sh.docs) == 0 {
		return
	}
	x.shards[server] = sh
	for term, ps := range sh.postings {
		x.df[term] += int32(len(ps))
	}
	x.n += len(sh.docs)
	for _, l := range sh.lens {
		x.lenSum += float64(l)
	}
}

func (x *Index) drop(server string) {
	old := x.shards[server]
	if old == nil {
		return
	}
	for term, ps := range old.postings {
		if x.df[term] -= int32(len(ps)); x.df[term] <= 0 {
			delete(x.df, term)
		}
	}
	x.n -= len(old.docs)
	for _, l := range old.lens {
		x.lenSum -= float64(l)
	}
	delete(x.shards, server)
}

// Len is the number of indexed documents.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.n
}

func build(docs []Doc) *shard {
	sh := &shard{postings: map[string][]posting{}}
	tf := map[string]float32{}
	contexts := map[string][]string{}
	for i := range docs {
		d := &docs[i]
		clear(tf)
		var length float32
		add := func(text string, w float32) {
			for _, t := range Terms(text) {
				tf[t] += w
				length += w
			}
		}
		add(d.Tool, wName)
		add(d.Title, wTitle)
		add(d.Description, wDesc)
		for _, p := range d.Params {
			add(p.Name, wParamName)
			add(p.Description, wParamDesc)
		}
		add(d.Server, wServer)
		if _, ok := contexts[d.Context]; !ok {
			contexts[d.Context] = Terms(d.Context) // one server's tools share it
		}
		for _, t := range contexts[d.Context] {
			tf[t] += wContext
		}
		id := int32(len(sh.docs))
		sh.docs = append(sh.docs, d)
		sh.lens = append(sh.lens, length)
		for t, f := range tf {
			sh.postings[t] = append(sh.postings[t], posting{id, f})
		}
	}
	return sh
}

// Search returns at most limit hits for query, best first; server, if not
// empty, keeps only that server's tools, and keep, if not nil, only the
// tools it accepts (it must not call the index).
func (x *Index) Search(query, server string, limit int, keep func(*Doc) bool) []Hit {
	q := queryTerms(query)
	if len(q) == 0 || limit <= 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.n == 0 {
		return nil
	}
	avg := float32(x.lenSum / float64(x.n))
	q = x.weigh(q)
	top := topK{limit: limit}
	var scores []float64
	var touched []int32
	for name, sh := range x.shards {
		if server != "" && name != server {
			continue
		}
		if cap(scores) < len(sh.docs) {
			scores = make([]float64, len(sh.docs))
		}
		scores = scores[:len(sh.docs)]
		touched = touched[:0]
		for _, qt := range q {
			ps := sh.postings[qt.term]
			if len(ps) == 0 {
				continue
			}
			idf := qt.weight
			for _, p := range ps {
				if scores[p.doc] == 0 {
					touched = append(touched, p.doc)
				}
				norm := k1 * (1 - b + b*sh.lens[p.doc]/avg)
				scores[p.doc] += idf * float64(p.tf*(k1+1)/(p.tf+norm))
			}
		}
		for _, id := range touched {
			if keep == nil || keep(sh.docs[id]) {
				top.offer(Hit{sh.docs[id], scores[id]})
			}
			scores[id] = 0
		}
	}
	sort.Slice(top.hits, func(i, j int) bool { return better(top.hits[i], top.hits[j]) })
	return top.hits
}

// weigh multiplies each query term's weight by its idf, once for all
// shards rather than once per shard, and drops the terms no tool holds, so
// the shards' loop looks up only terms that can score.
func (x *Index) weigh(q []queryTerm) []queryTerm {
	out := q[:0]
	for _, qt := range q {
		df := x.df[qt.term]
		if df == 0 {
			continue
		}
		qt.weight *= idf(x.n, df)
		out = append(out, qt)
	}
	return out
}

// better orders hits by score, then by key so that ties rank the same
// way every time.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Doc.Key < b.Doc.Key
}

// topK keeps the best limit hits offered, in a min-heap on better.
type topK struct {
	limit int
	hits  []Hit
}

func (t *topK) offer(h Hit) {
	if len(t.hits) < t.limit {
		t.hits = append(t.hits, h)
		for i := len(t.hits) - 1; i > 0; {
			parent := (i - 1) / 2
			if !better(t.hits[parent], t.hits[i]) {
				break
			}
			t.hits[parent], t.hits[i] = t.hits[i], t.hits[parent]
			i = parent
		}
		return
	}
	if !better(h, t.hits[0]) {
		return
	}
	t.hits[0] = h
	for i := 0; ; {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(t.hits) && better(t.hits[worst], t.hits[l]) {
			worst = l
		}
		if r < len(t.hits) && better(t.hits[worst], t.hits[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		t.hits[i], t.hits[worst] = t.hits[worst], t.hits[i]
		i = worst
	}
}

func idf(n int, df int32) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}
