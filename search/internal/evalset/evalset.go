// Package evalset reads the tool definitions of the search evaluation
// (search/testdata), for its tests and for the WordNet table's generator,
// which keeps the table to their vocabulary.
package evalset

import (
	"encoding/json"
	"fmt"
	"os"
)

// Tool is a tool definition as a server lists it, with what the index
// reads of it.
type Tool struct {
	Name, Title, Description string
	InputSchema              struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	} `json:"inputSchema"`
}

// Servers reads a file of tool lists by server name.
func Servers(path string) (map[string][]Tool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var servers map[string][]Tool
	if err := json.Unmarshal(b, &servers); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return servers, nil
}
