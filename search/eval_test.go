package search

import (
	"encoding/json"
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

type evalTool struct {
	Name, Title, Description string
	InputSchema              struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	} `json:"inputSchema"`
}

func loadEval(t testing.TB) (*Index, []struct {
	Query string   `json:"query"`
	Want  []string `json:"want"`
}) {
	t.Helper()
	var servers map[string][]evalTool
	readJSON(t, "testdata/servers.json", &servers)
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
	var queries []struct {
		Query string   `json:"query"`
		Want  []string `json:"want"`
	}
	readJSON(t, "testdata/queries.json", &queries)
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
	var r1, r5, r10, mrr float64
	for _, q := range queries {
		hits := x.Search(q.Query, "", 10, nil)
		rank := slices.IndexFunc(hits, func(h Hit) bool { return slices.Contains(q.Want, h.Doc.Key) }) + 1
		if rank == 0 {
			t.Logf("miss: %q (want %s; got %s)", q.Query, strings.Join(q.Want, ","), keys(hits, 3))
			continue
		}
		mrr += 1 / float64(rank)
		if rank == 1 {
			r1++
		}
		if rank <= 5 {
			r5++
		}
		r10++
	}
	n := float64(len(queries))
	t.Logf("%d tools, %d queries: recall@1 %.2f, recall@5 %.2f, recall@10 %.2f, MRR %.2f", x.Len(), len(queries), r1/n, r5/n, r10/n, mrr/n)
	if r10/n < 0.5 {
		t.Errorf("recall@10 %.2f: the ranking is broken", r10/n)
	}
}

func keys(hits []Hit, n int) string {
	var k []string
	for _, h := range hits[:min(n, len(hits))] {
		k = append(k, h.Doc.Key)
	}
	return strings.Join(k, ",")
}
