package surface

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/search"
)

// BenchmarkSearchReindex1k is what the search view spends re-indexing a
// 1,000-tool server: reading each definition (its parameters from the
// schema) and replacing the server's part of the index.
func BenchmarkSearchReindex1k(b *testing.B) {
	tools := make([]*mcp.Tool, 1000)
	for i := range tools {
		tools[i] = &mcp.Tool{
			Name: fmt.Sprintf("list_directory_%d", i), Title: "List directory",
			Description: "Get a detailed listing of all files and directories in a specified path, with [FILE] and [DIR] prefixes.",
			InputSchema: map[string]any{"type": "object", "required": []any{"path"}, "properties": map[string]any{
				"path":  map[string]any{"type": "string", "description": "The directory to list"},
				"depth": map[string]any{"type": "integer", "description": "How many levels to descend"},
			}},
		}
	}
	x := search.New()
	for b.Loop() {
		docs := make([]search.Doc, len(tools))
		for i, t := range tools {
			docs[i] = searchDoc("fs", Join("fs", t.Name), "Read and write files under the allowed directories.", t, "read")
		}
		x.Set("fs", docs)
	}
}
