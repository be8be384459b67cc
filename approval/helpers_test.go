package approval

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenmcp/warden/store"
)

// testStore is a registry over a store file that can be reopened.
type testStore struct {
	t    testing.TB
	path string
	db   store.Store
	r    *Registry
	puts atomic.Int64
}

func newStore(t testing.TB) *testStore {
	ts := &testStore{t: t, path: filepath.Join(t.TempDir(), "state.db")}
	ts.open()
	t.Cleanup(func() { ts.db.Close() })
	return ts
}

func (ts *testStore) open() {
	ts.t.Helper()
	db, err := store.Open(context.Background(), store.Options{Path: ts.path})
	if err != nil {
		ts.t.Fatal(err)
	}
	r, err := Open(context.Background(), db)
	if err != nil {
		ts.t.Fatal(err)
	}
	r.testHookPut = func(string, string) { ts.puts.Add(1) }
	ts.db, ts.r = db, r
}

// reopen closes the file and opens it again: a process restart.
func (ts *testStore) reopen() *Registry {
	ts.t.Helper()
	if err := ts.db.Close(); err != nil {
		ts.t.Fatal(err)
	}
	ts.open()
	return ts.r
}

// dump returns every key and value of the approval buckets.
func (ts *testStore) dump() []byte {
	ts.t.Helper()
	var buf bytes.Buffer
	err := ts.db.View(context.Background(), func(tx store.Tx) error {
		scan := func(bucket string) error {
			return tx.Scan(bucket, nil, false, func(k, v []byte) error {
				fmt.Fprintf(&buf, "%s/%s=%s\n", bucket, k, v)
				return nil
			})
		}
		if err := scan(bucketServers); err != nil {
			return err
		}
		return tx.Buckets(bucketTools, func(name string) error { return scan(bucketTools + "/" + name) })
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return buf.Bytes()
}

func tool(name, desc string) *mcp.Tool {
	return &mcp.Tool{
		Name:        name,
		Description: desc,
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":  map[string]any{"type": "string", "description": "file path, relative to the root"},
				"limit": map[string]any{"type": "integer", "minimum": float64(1), "maximum": float64(1000)},
				"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			},
			"required": []any{"path"},
		},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}
}

func inventory(n int, prefix string) []*mcp.Tool {
	out := make([]*mcp.Tool, n)
	for i := range out {
		out[i] = tool(fmt.Sprintf("%s_%04d", prefix, i), fmt.Sprintf("Reads record %d of the customer database and returns it as JSON; never writes.", i))
	}
	return out
}

func names(tools []*mcp.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

func hashes(t testing.TB, tools []*mcp.Tool) map[string]string {
	m := map[string]string{}
	for _, tl := range tools {
		h, err := Hash(tl)
		if err != nil {
			t.Fatal(err)
		}
		m[tl.Name] = h
	}
	return m
}

// statusCount counts present records by status.
func statusCount(r *Registry, server string) map[Status]int {
	m := map[Status]int{}
	for _, rec := range r.Tools(server) {
		if rec.Present {
			m[rec.Status]++
		}
	}
	return m
}

func status(t testing.TB, r *Registry, server, name string) Status {
	t.Helper()
	for _, rec := range r.Tools(server) {
		if rec.Name == name {
			return rec.Status
		}
	}
	t.Fatalf("no record %s/%s", server, name)
	return ""
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
