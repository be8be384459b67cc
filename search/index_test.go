package search

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"
)

func TestTerms(t *testing.T) {
	for in, want := range map[string][]string{
		"getFileInfo":        {"get", "fil", "info", "getfileinfo"},
		"list_directory":     {"list", "directory"},
		"trigger-long-run":   {"trigger", "long", "run"},
		"HTTPServer v2":      {"http", "server", "httpserver", "v", "2", "v2"},
		"Creates new files.": {"creat", "new", "fil"},
	} {
		if got := Terms(in); !slices.Equal(got, want) {
			t.Errorf("Terms(%q) = %q, want %q", in, got, want)
		}
	}
	for _, same := range [][]string{
		{"create", "creates", "created", "creating", "creation"},
		{"entry", "entries"},
		{"run", "running", "runs"},
		{"delete", "deleted", "deletion"},
	} {
		for _, w := range same[1:] {
			if Stem(w) != Stem(same[0]) {
				t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want the same", w, Stem(w), same[0], Stem(same[0]))
			}
		}
	}
}

func TestIndexFollowsSet(t *testing.T) {
	x := New()
	x.Set("fs", []Doc{
		{Key: "fs__read_file", Server: "fs", Tool: "read_file", Description: "Read a file's contents"},
		{Key: "fs__move_file", Server: "fs", Tool: "move_file", Description: "Move or rename a file"},
	})
	x.Set("mem", []Doc{{Key: "mem__read_graph", Server: "mem", Tool: "read_graph", Description: "Read the knowledge graph"}})
	if got := keys(x.Search("rename a file", "", 10, nil), 1); got != "fs__move_file" {
		t.Errorf("rename a file: best %s, want fs__move_file", got)
	}
	if got := keys(x.Search("read", "mem", 10, nil), 10); got != "mem__read_graph" {
		t.Errorf("read in server mem: %s", got)
	}
	// keep leaves out the tools it refuses, filling the limit with others.
	if got := keys(x.Search("read", "", 1, func(d *Doc) bool { return d.Server != "fs" }), 10); got != "mem__read_graph" {
		t.Errorf("read, fs refused: %s", got)
	}
	// Re-indexing a server replaces its tools; an empty list removes it.
	x.Set("fs", []Doc{{Key: "fs__read_file", Server: "fs", Tool: "read_file", Description: "Read a file's contents"}})
	if got := keys(x.Search("move rename", "", 10, nil), 10); got != "" {
		t.Errorf("after re-index, move rename finds %s", got)
	}
	x.Set("mem", nil)
	if got := keys(x.Search("read", "", 10, nil), 10); got != "fs__read_file" || x.Len() != 1 {
		t.Errorf("after removing mem: %s, %d docs", got, x.Len())
	}
	// A server's instructions are context: they find its tools, below a
	// tool that names the words itself.
	x.Set("kb", []Doc{{Key: "kb__query", Server: "kb", Tool: "query", Description: "Run a query", Context: "A knowledge base of contracts."}})
	if got := keys(x.Search("contracts", "", 10, nil), 10); got != "kb__query" {
		t.Errorf("contracts: %s, want kb__query through its server's instructions", got)
	}
	x.Set("kb", nil)
	if len(x.df) != len(x.shards["fs"].postings) {
		t.Errorf("document frequencies kept %d terms, the one shard has %d", len(x.df), len(x.shards["fs"].postings))
	}
}

// synthetic makes n tools over servers of perServer tools each, with words
// drawn from the evaluation set's descriptions, so term statistics look
// like real ones.
func synthetic(tb testing.TB, n, perServer int) map[string][]Doc {
	var servers map[string][]evalTool
	readJSON(tb, "testdata/servers.json", &servers)
	var base []evalTool
	for _, name := range sortedKeys(servers) {
		base = append(base, servers[name]...)
	}
	out := map[string][]Doc{}
	for i := range n {
		tool := base[i%len(base)]
		server := fmt.Sprintf("srv%03d", i/perServer)
		name := fmt.Sprintf("%s_%d", tool.Name, i)
		d := Doc{Key: server + "__" + name, Server: server, Tool: name, Title: tool.Title, Description: tool.Description}
		for p, prop := range tool.InputSchema.Properties {
			d.Params = append(d.Params, Param{p, prop.Description})
		}
		out[server] = append(out[server], d)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// BenchmarkSearch10k searches 10,000 tools (100 servers) with the
// evaluation queries and reports the p99 latency.
func BenchmarkSearch10k(b *testing.B) {
	x := New()
	for server, docs := range synthetic(b, 10000, 100) {
		x.Set(server, docs)
	}
	_, queries := loadEval(b)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		x.Search(queries[i%len(queries)].Query, "", 10, nil)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkReindex1k replaces the tools of a 1,000-tool server in an index
// that holds 10,000.
func BenchmarkReindex1k(b *testing.B) {
	x := New()
	all := synthetic(b, 10000, 1000)
	for server, docs := range all {
		x.Set(server, docs)
	}
	docs := all["srv000"]
	for b.Loop() {
		x.Set("srv000", docs)
	}
}

// BenchmarkIndexMemory reports the heap an index of 10,000 tools holds,
// beyond the documents themselves.
func BenchmarkIndexMemory(b *testing.B) {
	all := synthetic(b, 10000, 100)
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		x := New()
		for server, docs := range all {
			x.Set(server, docs)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/10k-tools")
		runtime.KeepAlive(x)
	}
}

// Searches run while servers are re-indexed (run with -race).
func TestIndexConcurrent(t *testing.T) {
	x := New()
	all := synthetic(t, 400, 100)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			for server, docs := range all {
				x.Set(server, docs)
			}
		}
	}()
	for {
		select {
		case <-done:
			if x.Len() != 400 {
				t.Fatalf("%d docs indexed, want 400", x.Len())
			}
			return
		default:
			for _, h := range x.Search("read a file", "", 5, nil) {
				if h.Score <= 0 {
					t.Fatalf("hit %s with score %v", h.Doc.Key, h.Score)
				}
			}
		}
	}
}
