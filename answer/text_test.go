package answer

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestText(t *testing.T) {
	content := []mcp.Content{&mcp.TextContent{Text: "one"}, &mcp.ImageContent{MIMEType: "image/png"}, &mcp.TextContent{Text: "two"}}
	if got := Text(content, 100); got != "one two" {
		t.Errorf("Text = %q, want the text blocks joined", got)
	}
	long := []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", 10)}, &mcp.TextContent{Text: "y"}}
	if got := Text(long, 4); got != "xxxx" {
		t.Errorf("bounded: %q", got)
	}
	if got := Text(nil, 4); got != "" {
		t.Errorf("no content: %q", got)
	}
}
