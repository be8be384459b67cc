package answer

import "sync"

// After holds work a call leaves for after its answer has reached the
// client: the direct path reads the end of the upstream's event stream only
// then (it usually arrives in a packet of its own, and the client need not
// wait for it). A caller that does not set one gets that work done before
// the call returns.
type After struct {
	mu  sync.Mutex
	fns []func()
}

// Add leaves fn for Run.
func (a *After) Add(fn func()) {
	a.mu.Lock()
	a.fns = append(a.fns, fn)
	a.mu.Unlock()
}

// Run does the work left, once.
func (a *After) Run() {
	a.mu.Lock()
	fns := a.fns
	a.fns = nil
	a.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
