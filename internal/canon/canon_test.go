package canon

import "testing"

func TestKeyOrderAndSpacingDoNotMatter(t *testing.T) {
	a, err := SHA256([]byte(`{"b": 1, "a": {"y": [1, 2.50], "x": "<&>"}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := SHA256(map[string]any{"a": map[string]any{"x": "<&>", "y": []any{1, 2.50}}, "b": 1})
	if err != nil {
		t.Fatal(err)
	}
	// 2.50 and 2.5 are different texts: numbers stay as written, so these differ.
	if a == b {
		t.Fatalf("number text should be kept as written")
	}
	c, _ := SHA256([]byte(`{"a":{"x":"<&>","y":[1,2.50]},"b":1}`))
	if a != c {
		t.Fatalf("same value, different spacing and order: %s != %s", a, c)
	}
	got, _ := JSON([]byte(`{"b":1,"a":"<&>"}`))
	if string(got) != `{"a":"<&>","b":1}` {
		t.Fatalf("canonical form = %s", got)
	}
}

func TestEmptyIsNull(t *testing.T) {
	got, err := JSON([]byte(" "))
	if err != nil || string(got) != "null" {
		t.Fatalf("JSON(empty) = %q, %v", got, err)
	}
}

// Member finds exactly the object's own members, whatever their values
// hold: nested objects with the same key, strings with quotes, brackets
// and commas.
func TestRawMember(t *testing.T) {
	obj := map[string]any{
		"a":    []any{map[string]any{"type": "inner"}, "x,]}\"", 1.5},
		"b\"c": "q",
		"p":    map[string]any{"type": map[string]any{"type": "deeper"}},
		"type": "object",
		"z":    nil,
		"é<>":  "u",
	}
	r, err := Append(nil, obj)
	if err != nil {
		t.Fatal(err)
	}
	for key, v := range obj {
		got, ok := Raw(r).Member(key)
		want, _ := JSON(v)
		if !ok || string(got) != string(want) {
			t.Errorf("Member(%q) = %s, %v; want %s", key, got, ok, want)
		}
	}
	for _, raw := range []string{string(r), `{}`, `[{"type":"object"}]`, `"type"`, ``, `{"a":{"type":"object"}}`, `{"type" :"object"}`} {
		if got, ok := Raw(raw).Member("typ"); ok {
			t.Errorf("Member(typ) of %s = %s", raw, got)
		}
		if raw == string(r) {
			for n := range len(raw) { // cut short: no panic
				Raw(raw[:n]).Member("type")
				Raw(raw[:n]).Member("z")
			}
		} else {
			if got, ok := Raw(raw).Member("type"); ok {
				t.Errorf("Member(type) of %s = %s", raw, got)
			}
		}
	}
}

// Append writes what JSON does, nil values of every kind included.
func TestAppendIsJSON(t *testing.T) {
	for _, v := range []any{nil, map[string]any(nil), []any(nil), Raw(nil), map[string]any{"a": Raw(nil), "b": []any(nil)},
		map[string]any{"z": 1.5, "a": []any{"<&>\u2028", true, nil, 1e21, 1e-7}}, Raw(`{"a":1}`)} {
		a, err := Append(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		if j, _ := JSON(v); string(a) != string(j) {
			t.Errorf("%#v: Append %s, JSON %s", v, a, j)
		}
	}
}
