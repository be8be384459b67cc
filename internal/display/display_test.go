package display

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"safe_read", "safe_read"},
		{"Grüße, 世界 ⚠", "Grüße, 世界 ⚠"},
		{"zz\x1b[2J\x1b[H", `zz\x1b[2J\x1b[H`},
		{"a\r\nb\tc\x7f", `a\r\nb\tc\x7f`},
		{"csi\u009b31m", `csi\x9b31m`},
		{"abc\u202egpj.exe", `abc\u202egpj.exe`},
		{"x\u2066y\u2069", `x\u2066y\u2069`},
		{"zero\u200bwidth\ufeff\u00ad", `zero\u200bwidth\ufeff\u00ad`},
		{"line\u2028sep", `line\u2028sep`},
		{"tag\U000e0041", `tag\U000e0041`},
		{"blank\u3164", `blank\u3164`},
		{"private\ue000", `private\ue000`},
		{"bad\xffutf8", `bad\xffutf8`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestText(t *testing.T) {
	if got, want := Text("one\x1b[2K\ntwo\t\u202e\r\n"), "one\\x1b[2K\ntwo\t\\u202e\\r\n"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}

// A character cut between two writes is escaped as if written at once.
func TestWriterSplitCharacter(t *testing.T) {
	var out bytes.Buffer
	w := Writer(&out)
	in := []byte("log \u202e line\n\x1b[31mred\n")
	for i := range in { // one byte at a time: every cut
		if _, err := w.Write(in[i : i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "log \\u202e line\n\\x1b[31mred\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func BenchmarkEscapePlain(b *testing.B) {
	s := "Read a file from the project directory and answer its text."
	for b.Loop() {
		_ = Escape(s)
	}
}

// JSON hides nothing from a person and changes nothing for a program.
func TestJSON(t *testing.T) {
	in := map[string]string{"name": "safe\u202eexe.\u200bx 😀 é", "plain": "ok"}
	b, _ := json.Marshal(in)
	got := JSON(b)
	if want := `{"name":"safe\u202eexe.\u200bx 😀 é","plain":"ok"}`; string(got) != want {
		t.Fatalf("JSON = %s, want %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["name"] != in["name"] {
		t.Fatalf("read back %q, %v", back, err)
	}
	if plain := []byte(`{"a": 1}`); &JSON(plain)[0] != &plain[0] {
		t.Error("plain JSON was copied")
	}
}
