// Package events fans out what happens in Warden (server state, approvals,
// latches, list changes, config reloads) to operators watching /v1/events.
// Publishing never blocks: a subscriber too slow to keep up loses events and
// is told so by a gap in the sequence numbers.
package events

import (
	"sync"
	"time"
)

// Event is one thing that happened.
type Event struct {
	Seq    uint64    `json:"seq"`
	At     time.Time `json:"at"`
	Type   string    `json:"type"` // server, tools, writes, list_changed, config, sessions, notifications
	Server string    `json:"server,omitempty"`
	Data   any       `json:"data,omitempty"`
}

// Broker delivers events to subscribers. The zero value is not usable; a nil
// *Broker drops everything, which suits tests of other packages.
type Broker struct {
	mu   sync.Mutex
	seq  uint64
	subs map[chan Event]struct{}
}

// New returns a broker.
func New() *Broker { return &Broker{subs: map[chan Event]struct{}{}} }

// Publish stamps e and sends it to every subscriber that has room.
func (b *Broker) Publish(e Event) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e.Seq, e.At = b.seq, time.Now().UTC()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// Subscribe returns a channel of events and the function that ends it.
func (b *Broker) Subscribe() (<-chan Event, func()) {
	ch := make(chan Event, 256)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}
}
