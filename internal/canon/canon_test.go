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
