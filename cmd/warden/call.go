package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/client"
	"github.com/wardenmcp/warden/internal/display"
)

func newCallCmd(g *globals) *cobra.Command {
	var argsJSON string
	cmd := &cobra.Command{
		Use:   "call SERVER TOOL [--args JSON]",
		Short: "Call a tool through Warden's policy, as an operator",
		Long: `Call a tool of SERVER through the same policy as an agent's call, and print
the result's content. A refusal (tool pending, server quarantined, writes
latched...) prints why and the command that resolves it, and exits 1.`,
		Example: `  warden call memory read_graph
  warden call fs read_file --args '{"path": "/tmp/x"}'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var raw json.RawMessage
			if argsJSON != "" {
				var obj map[string]any
				if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil || obj == nil {
					return usageErrorf("--args must be a JSON object such as '{\"path\": \"/tmp/x\"}'")
				}
				raw = json.RawMessage(argsJSON)
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			res, err := c.Call(cmd.Context(), args[0], args[1], raw)
			if err != nil {
				return g.apiErr(err)
			}
			if g.jsonOut {
				if err := g.printJSON(res); err != nil {
					return err
				}
				if res.IsError {
					return errReported
				}
				return nil
			}
			if !res.IsError {
				writeResult(g.stdout, res)
				return nil
			}
			var text strings.Builder
			writeResult(&text, res)
			if code := client.Refusal(res); code != "" {
				fmt.Fprintf(g.stderr, "refused (%s): %s", code, text.String())
			} else {
				fmt.Fprintf(g.stderr, "the tool answered an error: %s", text.String())
			}
			return errReported
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args", "", "the tool's arguments, a JSON object")
	cmd.ValidArgsFunction = g.completeArgs(1, presentTool)
	return cmd
}

// writeResult prints a result's content: text as is (escaped: the server
// wrote it), other content as a short description; the structured content
// when there is nothing else.
func writeResult(out io.Writer, res *mcp.CallToolResult) {
	w := display.Writer(out)
	for _, c := range res.Content {
		switch x := c.(type) {
		case *mcp.TextContent:
			fmt.Fprint(w, x.Text)
			if !strings.HasSuffix(x.Text, "\n") {
				fmt.Fprintln(w)
			}
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", x.MIMEType, len(x.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", x.MIMEType, len(x.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", x.URI)
		case *mcp.EmbeddedResource:
			switch r := x.Resource; {
			case r == nil:
				fmt.Fprintln(w, "[empty resource]")
			case r.Text != "":
				fmt.Fprintln(w, r.Text)
			default:
				fmt.Fprintf(w, "[resource %s %s, %d bytes]\n", r.URI, r.MIMEType, len(r.Blob))
			}
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "%s\n", b)
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		b, err := json.MarshalIndent(res.StructuredContent, "", "  ")
		if err == nil {
			fmt.Fprintf(w, "%s\n", b)
		}
	}
}
