package main

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"github.com/wardenmcp/warden/client"
)

func newSessionsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "sessions",
		Short: "List the persisted upstream HTTP sessions (never credentials)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stored := func(c *client.Client) (json.RawMessage, error) { return c.Sessions(cmd.Context()) }
			return ask(g, stored, func(raw json.RawMessage) error {
				var rows []map[string]any
				if json.Unmarshal(raw, &rows) != nil {
					return g.printJSON(raw) // not a list of records: show it as is
				}
				if len(rows) == 0 {
					fmt.Fprintln(g.stdout, "no persisted sessions")
					return nil
				}
				cols := columns(rows, "server")
				header := make([]string, len(cols))
				for i, c := range cols {
					header[i] = upper(c)
				}
				t := newTable(g.stdout, header...)
				for _, r := range rows {
					cells := make([]string, len(cols))
					for i, c := range cols {
						cells[i] = cell(r[c])
					}
					t.row(cells...)
				}
				t.flush()
				return nil
			})
		},
	}
}

// columns is the union of the rows' keys: first (if present), then sorted.
func columns(rows []map[string]any, first string) []string {
	var cols []string
	hasFirst := false
	for _, r := range rows {
		for k := range r {
			if k == first {
				hasFirst = true
			} else if !slices.Contains(cols, k) {
				cols = append(cols, k)
			}
		}
	}
	slices.Sort(cols)
	if hasFirst {
		cols = append([]string{first}, cols...)
	}
	return cols
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return truncate(x, 60)
	default:
		b, _ := json.Marshal(x)
		return truncate(string(b), 60)
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
