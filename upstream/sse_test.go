package upstream

import (
	"fmt"
	"strings"
	"testing"
	"testing/iotest"
)

// An event stream reads the same whichever line ending it uses (CRLF, LF
// or a lone CR), also when its bytes arrive one at a time.
func TestScanEventsLineEndings(t *testing.T) {
	const want = `[{"" "a\nb"} {"7" ""} {"7" "c"}]`
	for _, nl := range []string{"\n", "\r\n", "\r"} {
		in := strings.NewReplacer("\n", nl).Replace("data: a\ndata:b\n: comment\n\nid: 7\n\ndata: c\n\n")
		var got []struct{ id, data string }
		err := scanEvents(iotest.OneByteReader(strings.NewReader(in)), nil, func(id string, data []byte) bool {
			got = append(got, struct{ id, data string }{id, string(data)})
			return false
		})
		if s := fmt.Sprintf("%q", got); err != nil || s != want {
			t.Errorf("lines ending in %q: events %s (%v), want %s", nl, s, err, want)
		}
	}
}
