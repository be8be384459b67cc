package surface

import (
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/gateway"
)

// A tool's execution (execution.taskSupport, the tasks extension) comes
// from the gateway in its _meta, under gateway.MetaExecution, as it is
// pinned; clients see it listed as the tool's own execution again, on both
// paths: the fast path lists the definitions show encoded with listedTool,
// the SDK server's path answers toolsListed.

// listedTool is a tool as clients see it listed.
type listedTool struct{ *mcp.Tool }

func (t listedTool) MarshalJSON() ([]byte, error) {
	ex, has := t.Meta[gateway.MetaExecution]
	if !has {
		return json.Marshal(t.Tool)
	}
	c := *t.Tool
	c.Meta = maps.Clone(c.Meta)
	delete(c.Meta, gateway.MetaExecution)
	if len(c.Meta) == 0 {
		c.Meta = nil
	}
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	e, err := json.Marshal(ex)
	if err != nil {
		return nil, err
	}
	return append(append(append(b[:len(b)-1:len(b)-1], `,"execution":`...), e...), '}'), nil
}

// hasExecution reports whether any of tools has an execution.
func hasExecution(tools []*mcp.Tool) bool {
	for _, t := range tools {
		if _, ok := t.Meta[gateway.MetaExecution]; ok {
			return true
		}
	}
	return false
}

// toolsListed is a tools/list result of the view's SDK server whose tools
// are encoded as listedTool.
type toolsListed struct{ *mcp.ListToolsResult }

func (r toolsListed) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(r.ListToolsResult)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	tools := make([]listedTool, len(r.Tools))
	for i, t := range r.Tools {
		tools[i] = listedTool{t}
	}
	if m["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
