package surface

import (
	"regexp"
	"strings"
	"testing"
)

var clientName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestJoin(t *testing.T) {
	if got := Join("memory", "read_graph"); got != "memory__read_graph" {
		t.Fatalf("plain name changed: %q", got)
	}
	long := strings.Repeat("x", 80)
	cases := [][2]string{{"fs", "a.b"}, {"fs", "a_b"}, {"fs", long}, {"fs", long + "y"}, {"s", "tool with spaces/é"}}
	seen := map[string][2]string{}
	for _, c := range cases {
		got := Join(c[0], c[1])
		if !clientName.MatchString(got) {
			t.Errorf("Join(%q, %q) = %q: not a name clients accept", c[0], c[1], got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("Join(%q) and Join(%q) collide on %q", prev, c, got)
		}
		seen[got] = c
		if Join(c[0], c[1]) != got {
			t.Errorf("Join is not stable for %q", c)
		}
	}
}
