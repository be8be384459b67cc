package store

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// hub hands published events to watchers on one goroutine, in order, so
// that a slow watcher delays the others but never the publisher.
type hub struct {
	mu      sync.Mutex
	watches map[string]map[int]func(Event)
	next    int
	rejoins map[int]func(context.Context) error
	queue   []Event
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	stop    sync.Once
}

func newHub() *hub {
	h := &hub{watches: map[string]map[int]func(Event){}, rejoins: map[int]func(context.Context) error{}, wake: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{})}
	go h.run()
	return h
}

func (h *hub) watch(topic string, fn func(Event)) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.watches[topic] == nil {
		h.watches[topic] = map[int]func(Event){}
	}
	id := h.next
	h.next++
	h.watches[topic][id] = fn
	return func() {
		h.mu.Lock()
		delete(h.watches[topic], id)
		h.mu.Unlock()
	}
}

// onRejoin registers fn for rejoin (Store.OnRejoin).
func (h *hub) onRejoin(fn func(context.Context) error) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	h.rejoins[id] = fn
	return func() {
		h.mu.Lock()
		delete(h.rejoins, id)
		h.mu.Unlock()
	}
}

// rejoin runs the rejoin funcs, one after the other in the order they
// were registered, and stops at the first error.
func (h *hub) rejoin(ctx context.Context) error {
	h.mu.Lock()
	fns := make([]func(context.Context) error, 0, len(h.rejoins))
	for _, id := range slices.Sorted(maps.Keys(h.rejoins)) {
		fns = append(fns, h.rejoins[id])
	}
	h.mu.Unlock()
	for _, fn := range fns {
		if err := fn(ctx); err != nil {
			return err
		}
	}
	return nil
}

// deliver queues events for the watchers.
func (h *hub) deliver(es ...Event) {
	if len(es) == 0 {
		return
	}
	h.mu.Lock()
	h.queue = append(h.queue, es...)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// resync tells every watcher to reload.
func (h *hub) resync() {
	h.mu.Lock()
	var es []Event
	for topic := range h.watches {
		es = append(es, Event{Topic: topic, Resync: true})
	}
	h.mu.Unlock()
	h.deliver(es...)
}

func (h *hub) run() {
	defer close(h.done)
	for {
		select {
		case <-h.quit:
			return
		case <-h.wake:
		}
		for {
			h.mu.Lock()
			if len(h.queue) == 0 {
				h.mu.Unlock()
				break
			}
			e := h.queue[0]
			h.queue = h.queue[1:]
			var fns []func(Event)
			for _, fn := range h.watches[e.Topic] {
				fns = append(fns, fn)
			}
			h.mu.Unlock()
			for _, fn := range fns {
				fn(e)
			}
		}
	}
}

// close stops the hub; closing again does nothing.
func (h *hub) close() {
	h.stop.Do(func() { close(h.quit) })
	<-h.done
}
