package guardrails

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/segmentio/encoding/json"
)

// definition is the part of a tool definition the scanner reads. _meta stays
// generic; schemas keep only the words a model reads, and tolerate what
// servers put there (boolean schemas, tuple items, numbers for strings).
type definition struct {
	Name         string         `json:"name"`
	Title        string         `json:"title"`
	Description  string         `json:"description"`
	InputSchema  *schema        `json:"inputSchema"`
	OutputSchema *schema        `json:"outputSchema"`
	Meta         map[string]any `json:"_meta"`
	Annotations  struct {
		Title string `json:"title"`
	} `json:"annotations"`
}

// schema is a JSON Schema's words. Raw values are read as strings only when
// they are strings.
type schema struct {
	Title       json.RawMessage    `json:"title"`
	Description json.RawMessage    `json:"description"`
	Default     json.RawMessage    `json:"default"`
	Enum        []json.RawMessage  `json:"enum"`
	Examples    []json.RawMessage  `json:"examples"`
	Properties  map[string]*schema `json:"properties"`
	Items       json.RawMessage    `json:"items"` // a schema, or an array of them
	AnyOf       []*schema          `json:"anyOf"`
	OneOf       []*schema          `json:"oneOf"`
	AllOf       []*schema          `json:"allOf"`
}

// UnmarshalJSON reads an object; anything else (true, false) has no words.
func (s *schema) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	type plain schema
	return json.Unmarshal(b, (*plain)(s))
}

// items returns the schemas of an array's items.
func (s *schema) items() []*schema {
	var one schema
	if json.Unmarshal(s.Items, &one) == nil && len(s.Items) > 0 && s.Items[0] == '{' {
		return []*schema{&one}
	}
	var many []*schema
	_ = json.Unmarshal(s.Items, &many) // not an array either: no words
	return many
}

// str returns a raw value's string, or "" when it is not a string.
func str(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// kind says what a field is, because some rules read names and descriptions
// differently (a parameter description that asks to be filled with the
// conversation is itself the destination).
type kind uint8

const (
	kindName      kind = iota // the tool's name
	kindProse                 // title, description, annotations title, _meta strings
	kindParamName             // a parameter's name
	kindParam                 // a parameter's description, title, enum and default strings
)

// field is one piece of text of a definition and where it came from.
type field struct {
	where string // "description", "param sidenote", "_meta hint"…
	kind  kind
	text  string
}

// fields parses a definition and returns its texts in a stable order.
func fields(def []byte) ([]field, error) {
	var d definition
	if err := json.Unmarshal(def, &d); err != nil {
		return nil, fmt.Errorf("tool definition is not the JSON of an MCP tool: %w", err)
	}
	var fs []field
	add := func(where string, k kind, s string) {
		if strings.TrimSpace(s) != "" {
			fs = append(fs, field{where, k, s})
		}
	}
	add("name", kindName, d.Name)
	add("title", kindProse, d.Title)
	add("annotations.title", kindProse, d.Annotations.Title)
	add("description", kindProse, d.Description)
	schemaFields(&fs, "param ", d.InputSchema)
	schemaFields(&fs, "output ", d.OutputSchema)
	metaFields(&fs, "_meta", d.Meta)
	return fs, nil
}

// schemaFields adds a schema's own description and every property's name and
// texts, nested properties and array items included, as "param a.b".
func schemaFields(fs *[]field, prefix string, root *schema) {
	if root == nil {
		return
	}
	if d := str(root.Description); strings.TrimSpace(d) != "" {
		*fs = append(*fs, field{strings.TrimSpace(prefix) + " schema", kindProse, d})
	}
	var walk func(path string, s *schema)
	walk = func(path string, s *schema) {
		if s == nil {
			return
		}
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			p := s.Properties[name]
			where := prefix + path + name
			*fs = append(*fs, field{where, kindParamName, name})
			if t := schemaText(p); t != "" {
				*fs = append(*fs, field{where, kindParam, t})
			}
			walk(path+name+".", p)
		}
		if len(s.Items) > 0 {
			for _, it := range s.items() {
				walk(path, it)
			}
		}
		for _, alts := range [][]*schema{s.AnyOf, s.OneOf, s.AllOf} {
			for _, a := range alts {
				walk(path, a)
			}
		}
	}
	walk("", root)
}

// schemaText joins the words of one property a model reads: its title,
// description, and string enum values, default and examples, its anyOf,
// oneOf and allOf alternatives' too.
func schemaText(p *schema) string {
	var parts []string
	var add func(p *schema)
	add = func(p *schema) {
		if p == nil {
			return
		}
		for _, raw := range [][]json.RawMessage{{p.Title, p.Description, p.Default}, p.Enum, p.Examples} {
			for _, r := range raw {
				if s := str(r); strings.TrimSpace(s) != "" {
					parts = append(parts, s)
				}
			}
		}
		for _, alts := range [][]*schema{p.AnyOf, p.OneOf, p.AllOf} {
			for _, a := range alts {
				add(a)
			}
		}
	}
	add(p)
	return strings.Join(parts, " | ")
}

// metaFields adds every string in _meta, named by its key path.
func metaFields(fs *[]field, path string, v any) {
	switch x := v.(type) {
	case string:
		if strings.TrimSpace(x) != "" {
			*fs = append(*fs, field{path, kindProse, x})
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			metaFields(fs, path+" "+k, x[k])
		}
	case []any:
		for _, e := range x {
			metaFields(fs, path, e)
		}
	}
}
