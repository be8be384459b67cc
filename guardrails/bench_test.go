package guardrails

import (
	"bytes"
	"encoding/json"
	"testing"
)

// corpusDefinitions returns n definitions from the corpus, repeating it, so
// the benchmark scans the mix of lengths and languages the corpus has, as
// compact JSON like the canonical form Warden stores.
func corpusDefinitions(b *testing.B, n int) []json.RawMessage {
	var defs []json.RawMessage
	for _, e := range loadCorpus(b) {
		d := e.Def
		if d == nil {
			d = e.New
		}
		var c bytes.Buffer
		if err := json.Compact(&c, d); err != nil {
			b.Fatal(err)
		}
		defs = append(defs, c.Bytes())
	}
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = defs[i%len(defs)]
	}
	return out
}

// BenchmarkScan scans 1,000 definitions per op; ns/def is the cost of one.
func BenchmarkScan(b *testing.B) {
	defs := corpusDefinitions(b, 1000)
	compiled() // the rules compile once, on first use
	b.ResetTimer()
	for b.Loop() {
		for _, d := range defs {
			if _, err := Scan(d); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(defs)), "ns/def")
}

// BenchmarkChanged compares 1,000 old and new definitions per op.
func BenchmarkChanged(b *testing.B) {
	var pairs [][2]json.RawMessage
	for _, e := range loadCorpus(b) {
		if e.Old != nil {
			pairs = append(pairs, [2]json.RawMessage{e.Old, e.New})
		}
	}
	compiled()
	b.ResetTimer()
	for b.Loop() {
		for i := range 1000 {
			p := pairs[i%len(pairs)]
			if _, err := Changed(p[0], p[1]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/pair")
}
