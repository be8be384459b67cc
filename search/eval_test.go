package search

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// The evaluation set: tool lists of real MCP servers (server-everything,
// server-memory and server-filesystem as their npm packages list them, the
// others from their documented tool lists) and queries written the way
// people ask, each with the tools that answer it. It measures; it is not
// tuned against (the ranking's weights and synonyms came first).

// evalTool is a tool definition as a server lists it, with what the index
// reads of it.
type evalTool struct {
	Name, Title, Description string
	InputSchema              struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	} `json:"inputSchema"`
}

// evalQuery is a query and the tools (keys) that answer it.
type evalQuery struct {
	Query string   `json:"query"`
	Want  []string `json:"want"`
}

// loadEval indexes the servers of the first evaluation set and reads its
// queries.
func loadEval(t testing.TB) (*Index, []evalQuery) {
	return loadEvalSet(t, "testdata/servers.json", "testdata/queries.json")
}

func loadEvalSet(t testing.TB, serversPath, queriesPath string) (*Index, []evalQuery) {
	t.Helper()
	var servers map[string][]evalTool
	readJSON(t, serversPath, &servers)
	x := New()
	for server, tools := range servers {
		var docs []Doc
		for _, tool := range tools {
			d := Doc{Key: server + "__" + tool.Name, Server: server, Tool: tool.Name, Title: tool.Title, Description: tool.Description}
			for name, p := range tool.InputSchema.Properties {
				d.Params = append(d.Params, Param{name, p.Description})
			}
			docs = append(docs, d)
		}
		x.Set(server, docs)
	}
	var queries []evalQuery
	readJSON(t, queriesPath, &queries)
	return x, queries
}

func readJSON(t testing.TB, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestQuality prints recall@1/5/10 and MRR over the evaluation set
// (go test ./search -run TestQuality -v). It fails only if ranking breaks
// outright, not at a tuned threshold.
func TestQuality(t *testing.T) {
	x, queries := loadEval(t)
	f := measure(t, x, queries)
	t.Logf("%d tools, %s", x.Len(), f)
	if f.r10 < 0.5 {
		t.Errorf("recall@10 %.2f: the ranking is broken", f.r10)
	}
}

// figures are the share of queries answered at rank 1, within 5 and
// within 10, and the mean reciprocal rank (0 past rank 10).
type figures struct {
	n                int
	r1, r5, r10, mrr float64
}

func (f figures) String() string {
	return fmt.Sprintf("%d queries: recall@1 %.2f, recall@5 %.2f, recall@10 %.2f, MRR %.2f", f.n, f.r1, f.r5, f.r10, f.mrr)
}

// measure ranks each query over x and logs the misses (with -v).
func measure(t *testing.T, x *Index, queries []evalQuery) figures {
	f := figures{n: len(queries)}
	for _, q := range queries {
		hits := x.Search(q.Query, "", 10, nil)
		rank := slices.IndexFunc(hits, func(h Hit) bool { return slices.Contains(q.Want, h.Doc.Key) }) + 1
		if rank == 0 {
			t.Logf("miss: %q (want %s; got %s)", q.Query, strings.Join(q.Want, ","), keys(hits, 3))
			continue
		}
		f.mrr += 1 / float64(rank)
		if rank == 1 {
			f.r1++
		}
		if rank <= 5 {
			f.r5++
		}
		f.r10++
	}
	n := float64(max(f.n, 1))
	f.r1, f.r5, f.r10, f.mrr = f.r1/n, f.r5/n, f.r10/n, f.mrr/n
	return f
}

func keys(hits []Hit, n int) string {
	var k []string
	for _, h := range hits[:min(n, len(hits))] {
		k = append(k, h.Doc.Key)
	}
	return strings.Join(k, ",")
}
