package approval

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/wardenmcp/warden/internal/canon"
)

func TestHashFormat(t *testing.T) {
	h := must[string](t)(Hash(tool("read_file", "Reads a file.")))
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(h) {
		t.Fatalf("hash %q", h)
	}
	if _, err := Hash(nil); err == nil {
		t.Fatal("nil tool hashed")
	}
}

// The fast path must give exactly canon.JSON's bytes.
func TestDefinitionIsCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := rng.IntN(7); {
		case depth > 3 || k == 0:
			return []any{"<&>\u2028é\x01\b\f\n\t\"\\\x7f\xff", 0.1, 1e21, 1e-7, -0.0, -3.0, 123456789.0, 1.5e300, true, false, nil, json.Number("1.50")}[rng.IntN(12)]
		case k < 4:
			m := map[string]any{}
			for i := range rng.IntN(5) {
				m[fmt.Sprintf("k%d<%d>", rng.IntN(50), i)] = gen(depth + 1)
			}
			return m
		default:
			a := make([]any, rng.IntN(4))
			for i := range a {
				a[i] = gen(depth + 1)
			}
			return a
		}
	}
	for i := range 500 {
		tl := &mcp.Tool{Name: fmt.Sprintf("t%d", i), Title: "T & <x>", Description: "d\u2029",
			InputSchema: gen(0), OutputSchema: gen(0),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: i%2 == 0, Title: "a"}}
		if m, ok := gen(1).(map[string]any); ok && i%3 == 0 {
			tl.Meta = m
			tl.Icons = []mcp.Icon{{Source: "https://x.test/i.png?a<b>", MIMEType: "image/png", Sizes: []string{"48x48"}, Theme: "dark"}}
		}
		_, got, err := hashTool(tl)
		if err != nil {
			t.Fatal(err)
		}
		m := referenceDefinition(tl)
		want := must[[]byte](t)(canon.JSON(m))
		if string(got) != string(want) {
			t.Fatalf("fast path differs from canon.JSON:\n%s\n%s", got, want)
		}
		if h := must[string](t)(Hash(tl)); h != "sha256:"+must[string](t)(canon.SHA256(m)) {
			t.Fatalf("hash is not sha256 of canonical JSON")
		}
		// As an inventory keeps it (upstream's kept), its schemas as
		// canon.Raw: the pin must not change.
		kept := *tl
		kept.InputSchema = canon.Raw(must[[]byte](t)(canon.Append(nil, tl.InputSchema)))
		kept.OutputSchema = canon.Raw(must[[]byte](t)(canon.Append(nil, tl.OutputSchema)))
		if _, again, err := hashTool(&kept); err != nil || string(again) != string(got) {
			t.Fatalf("schemas as canon.Raw: %v\n%s\n%s", err, again, got)
		}
	}
}

// referenceDefinition builds the hashed object the slow, obvious way.
func referenceDefinition(tl *mcp.Tool) map[string]any {
	m := map[string]any{"name": tl.Name}
	if tl.Title != "" {
		m["title"] = tl.Title
	}
	if tl.Description != "" {
		m["description"] = tl.Description
	}
	if len(tl.Meta) > 0 {
		m["_meta"] = map[string]any(tl.Meta)
	}
	if len(tl.Icons) > 0 {
		m["icons"] = tl.Icons
	}
	if !absent(tl.InputSchema) {
		m["inputSchema"] = tl.InputSchema
	}
	if !absent(tl.OutputSchema) {
		m["outputSchema"] = tl.OutputSchema
	}
	if a := tl.Annotations; a != nil {
		am := map[string]any{}
		if a.DestructiveHint != nil {
			am["destructiveHint"] = *a.DestructiveHint
		}
		if a.OpenWorldHint != nil {
			am["openWorldHint"] = *a.OpenWorldHint
		}
		if a.ReadOnlyHint {
			am["readOnlyHint"] = true
		}
		if a.IdempotentHint {
			am["idempotentHint"] = true
		}
		if a.Title != "" {
			am["title"] = a.Title
		}
		if len(am) > 0 {
			m["annotations"] = am
		}
	}
	return m
}

// Schemas that are not decoded JSON (structs, raw JSON) take the canon.JSON
// path and must hash like their decoded form.
func TestHashNonGenericSchemas(t *testing.T) {
	type prop struct {
		Type string `json:"type"`
		Desc string `json:"description,omitempty"`
	}
	type schema struct {
		Type       string          `json:"type"`
		Properties map[string]prop `json:"properties"`
	}
	tr, f := true, false
	a := &mcp.Tool{Name: "n", Title: "t", InputSchema: &schema{Type: "object", Properties: map[string]prop{"b": {Type: "string", Desc: "<b>"}, "a": {Type: "number"}}},
		OutputSchema: json.RawMessage(` {"z":1, "a":[true,null]} `), Annotations: &mcp.ToolAnnotations{DestructiveHint: &tr, OpenWorldHint: &f, IdempotentHint: true}}
	b := &mcp.Tool{Name: "n", Title: "t", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "number"}, "b": map[string]any{"type": "string", "description": "<b>"}}},
		OutputSchema: map[string]any{"a": []any{true, nil}, "z": 1.0}, Annotations: &mcp.ToolAnnotations{DestructiveHint: &tr, OpenWorldHint: &f, IdempotentHint: true}}
	ha, hb := must[string](t)(Hash(a)), must[string](t)(Hash(b))
	if ha != hb || hb != "sha256:"+must[string](t)(canon.SHA256(referenceDefinition(b))) {
		t.Fatalf("%s %s", ha, hb)
	}
}

func TestHashSameDefinitionSameHash(t *testing.T) {
	a := tool("x", "d")
	b := tool("x", "d")
	b.InputSchema = json.RawMessage(`{ "required":["path"], "type":"object", "properties":{
		"tags":{"items":{"type":"string"},"type":"array"},
		"limit":{"maximum":1000,"minimum":1,"type":"integer"},
		"path":{"description":"file path, relative to the root","type":"string"}}}`)
	b.Meta = mcp.Meta{}    // empty: not sent, as absent
	b.Icons = []mcp.Icon{} // likewise
	if ha, hb := must[string](t)(Hash(a)), must[string](t)(Hash(b)); ha != hb {
		t.Fatalf("map and raw schema hash differently: %s %s", ha, hb)
	}
	// Absent is absent, however it is spelled.
	c := &mcp.Tool{Name: "y"}
	d := &mcp.Tool{Name: "y", InputSchema: json.RawMessage("null"), OutputSchema: map[string]any(nil),
		Annotations: &mcp.ToolAnnotations{}}
	if must[string](t)(Hash(c)) != must[string](t)(Hash(d)) {
		t.Fatal("absent fields hash differently")
	}
}

func TestHashCoversEveryField(t *testing.T) {
	f := false
	base := must[string](t)(Hash(tool("x", "d")))
	for name, mut := range map[string]func(*mcp.Tool){
		"name":        func(t *mcp.Tool) { t.Name = "y" },
		"title":       func(t *mcp.Tool) { t.Title = "T" },
		"description": func(t *mcp.Tool) { t.Description = "d2" },
		"input":       func(t *mcp.Tool) { t.InputSchema.(map[string]any)["required"] = []any{} },
		"output":      func(t *mcp.Tool) { t.OutputSchema = map[string]any{"type": "object"} },
		"readOnly":    func(t *mcp.Tool) { t.Annotations.ReadOnlyHint = false },
		"destructive": func(t *mcp.Tool) { t.Annotations.DestructiveHint = &f },
		"openWorld":   func(t *mcp.Tool) { t.Annotations.OpenWorldHint = &f },
		"idempotent":  func(t *mcp.Tool) { t.Annotations.IdempotentHint = true },
		"annTitle":    func(t *mcp.Tool) { t.Annotations.Title = "T" },
		"noAnn":       func(t *mcp.Tool) { t.Annotations = nil },
		"meta":        func(t *mcp.Tool) { t.Meta = mcp.Meta{"ui/resourceUri": "ui://x/app.html"} },
		"icon":        func(t *mcp.Tool) { t.Icons = []mcp.Icon{{Source: "https://x.test/i.png"}} },
	} {
		tl := tool("x", "d")
		mut(tl)
		if must[string](t)(Hash(tl)) == base {
			t.Errorf("%s: change not covered by the hash", name)
		}
	}
}

// A tool without _meta and icons keeps the pin it had before they were
// covered, so an upgrade does not flip approved tools to changed. The
// expected values were computed by the formula before _meta and icons
// were added (commit 21104d4).
func TestHashStableWithoutMetaAndIcons(t *testing.T) {
	f := false
	for _, c := range []struct {
		tool *mcp.Tool
		want string
	}{
		{&mcp.Tool{Name: "echo"}, "sha256:f7817751a90d6baf078dd0e2d98b278faa025d83ccee00eb9b60100ad65bdcb9"},
		{&mcp.Tool{Name: "read_file", Title: "Read a file", Description: "Reads a file.\nSafe.",
			InputSchema:  map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}},
			OutputSchema: map[string]any{"type": "object"},
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f, Title: "Read"}},
			"sha256:3c72805ea042d6f37ca0e8fccd3de65e8c9f8ec83a9dc1298d3c7837b24c7d9d"},
	} {
		if got := must[string](t)(Hash(c.tool)); got != c.want {
			t.Errorf("%s: hash %s, want %s (as before _meta and icons were pinned)", c.tool.Name, got, c.want)
		}
	}
}
