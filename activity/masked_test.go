package activity

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// An entry's error is masked before it is cut, so a credential that
// straddles the cut is masked too; what is kept is valid UTF-8 and bounded.
func TestMaskedMasksThenCuts(t *testing.T) {
	token := "ghp_" + "Zq8rT2mXv9LkP4sWb7NcY3hJd6FgA1eKu5Ro"
	for _, at := range []int{0, MaxError - 10, MaxError + 10} {
		s := strings.Repeat("é", at/2) + " " + token + " " + strings.Repeat("x", 100)
		got := Masked(s)
		if strings.Contains(got, token[4:8]) || len(got) > MaxError+len("…") || !utf8.ValidString(got) {
			t.Errorf("at %d: %q", at, got)
		}
		if at < MaxError-len("[REDACTED:github-pat]") && !strings.Contains(got, "[REDACTED:github-pat]") {
			t.Errorf("at %d: no mask in %q", at, got)
		}
	}
	if Masked("") != "" || Masked("plain words") != "plain words" {
		t.Error("text without credentials changed")
	}
}
