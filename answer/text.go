package answer

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Text is the text blocks of content joined by spaces, at most max bytes:
// what a person or a parser reads of an answer, bounded however long it is.
func Text(content []mcp.Content, max int) string {
	var b strings.Builder
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok && b.Len() < max {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			b.WriteString(t.Text)
		}
	}
	s := b.String()
	return s[:min(len(s), max)]
}
