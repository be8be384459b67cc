package daemon

import (
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

var sink [][]byte

// burst allocates n MiB and drops it: garbage.
func burst(n int) {
	for range n {
		sink = append(sink, make([]byte, 1<<20))
	}
	sink = nil
}

// What a burst leaves is given back once, at the first quiet look; the
// runtime alone would not collect it, having no reason to.
func TestReleaseWhenQuiet(t *testing.T) {
	released := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	burst(64)
	before, n := released(), 0
	r := newReleaser(func() { n++; debug.FreeOSMemory() })
	for range 5 {
		r.look()
	}
	if n != 1 || released() < before+48<<20 {
		t.Fatalf("%d releases, %d MiB given back, after a 64 MiB burst; want 1, at least 48", n, (released()-before)>>20)
	}
}

// While the process keeps allocating, nothing is released: the pages would
// be taken again at once.
func TestNoReleaseUnderLoad(t *testing.T) {
	burst(64)
	n := 0
	r := newReleaser(func() { n++ })
	for range 10 {
		burst(2) // beyond quietAlloc between two looks
		r.look()
	}
	if n != 0 {
		t.Fatalf("%d releases under load, want 0", n)
	}
}
