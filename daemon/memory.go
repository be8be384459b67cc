package daemon

import (
	"context"
	"runtime/metrics"
	"time"
)

// The memory a burst of work leaves (the start's listing, scanning and
// rule compiling; a wave of calls) stays with the process after the work
// ends, returned to the system by the runtime's scavenger over minutes. So,
// once the daemon is quiet (it allocated less than quietAlloc in a
// releaseEvery) and the heap holds more than releaseAbove it could give
// back, it is given back at once: one collection, a few milliseconds of CPU
// once after each burst. Under load nothing is released: the pages would be
// taken again at once, each at a page fault's cost.
const (
	releaseEvery = 5 * time.Second
	releaseAbove = 4 << 20
	quietAlloc   = 1 << 20
)

// releaseWhenQuiet gives the heap's spare memory back after bursts (by
// release: debug.FreeOSMemory), looking every so often, until ctx ends.
func releaseWhenQuiet(ctx context.Context, every time.Duration, release func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	r := newReleaser(release)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.look()
		}
	}
}

// releaser releases when, since its last look, the process was quiet and
// the heap grew releaseAbove beyond what it kept after the last release.
type releaser struct {
	h       heapReading
	kept    uint64 // the heap after the last release (none yet: 0)
	release func()
}

func newReleaser(release func()) *releaser {
	r := &releaser{release: release}
	r.h.read()
	return r
}

func (r *releaser) look() {
	allocated := r.h.allocs
	r.h.read()
	if r.h.allocs-allocated < quietAlloc && r.h.held > r.kept+releaseAbove {
		r.release()
		r.h.read()
		r.kept = r.h.held
	}
}

// heapReading is the runtime's account of the heap.
type heapReading struct {
	samples [4]metrics.Sample
	allocs  uint64 // bytes allocated since the start
	held    uint64 // the heap's memory not given back: objects (live or garbage), free and unused
}

func (h *heapReading) read() {
	if h.samples[0].Name == "" {
		for i, name := range []string{
			"/gc/heap/allocs:bytes",
			"/memory/classes/heap/objects:bytes",
			"/memory/classes/heap/free:bytes",
			"/memory/classes/heap/unused:bytes",
		} {
			h.samples[i].Name = name
		}
	}
	metrics.Read(h.samples[:])
	h.allocs = h.samples[0].Value.Uint64()
	h.held = h.samples[1].Value.Uint64() + h.samples[2].Value.Uint64() + h.samples[3].Value.Uint64()
}
